"""backward() and grad(): seed the roots, sweep the tape once, deliver the adjoints.

The sweep itself is ``tape.sweep`` (one call into the compiled interpreter). This module
checks arguments the way torch does, joins the roots' tapes, and accumulates leaf adjoints
into ``.grad`` (or returns them, for ``grad``).
"""
import sys

import numpy as np

from .._core import tape as _tp
from .._schema import F_HIDDEN, IA, IB, K, NDT, NK, NOFF, NPROD, NSIZE, OP, OUT, P0
from ..ops import OPCODE
from .._state import STATE
from .._record import _out
from ..tensor import Size, _wrap
from . import higher, hooks
from .hooks import leaf_hooks, leaf_hooks_tensor
from .._core.names import multi_name_id, name_id, tap_name_id


_ENGINE = None


def _engine():
    global _ENGINE
    engine = sys.modules[__name__]
    engine._tensor_mod()
    _ENGINE = engine
    return engine


_PYFUNC = OPCODE["pyfunc"]
_COPY = OPCODE["copy"]


def _tensor_cls():
    return _tensor_mod().Tensor


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


_ONES = {}


def _one(shape, npdt):
    """The implicit seed of a one-element output: a shared read-only array of ones (every
    consumer reads or copies it)."""
    a = np.ones(shape, npdt)
    a.flags.writeable = False
    _ONES[(shape, npdt)] = a
    return a


def _seed_grads(tensors, grad_tensors, what="backward"):
    Tensor = _tensor_cls()
    grads = []
    if len(grad_tensors) not in (0, len(tensors)):
        raise RuntimeError("got %d tensors and %d gradients" % (len(tensors), len(grad_tensors)))
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError("%s expects Tensors, got %s" % (what, type(t).__name__))
        g = grad_tensors[i] if grad_tensors else None
        if not t._rg:
            raise RuntimeError("element %d of tensors does not require grad and does not have a "
                               "grad_fn" % i)
        if g is None:
            d = t._data
            if d.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _ONES.get((d.shape, t._dtype.np)) or _one(d.shape, t._dtype.np)
        else:
            if isinstance(g, Tensor):
                gd = g._data
            else:
                gd = np.asarray(g)
            if np.shape(gd) != t._data.shape:
                raise RuntimeError("Mismatch in shape: grad_output[%d] has a shape of %r and "
                                   "output[%d] has a shape of %r."
                                   % (i, _size(np.shape(gd)), i, _size(t._data.shape)))
            g = np.asarray(gd, dtype=t._dtype.np)
        grads.append(g)
    return grads


def _size(shape):
    return Size(shape)


def _run(tensors, grads, retain_graph, inputs=None):
    """Sweep the (joined) tape of the non-leaf roots. Returns (tape, adjoints, nreach, the
    nodes of each input on the tape, the ``Paths`` run or None for all) or None. ``inputs`` (autograd.grad): only entries on a
    path from them to the roots run and are freed, as in torch's engine; the graph below a
    non-leaf input is neither executed nor freed."""
    if len(tensors) == 1:                   # one root: no joining
        t = tensors[0]
        if t._tape is None:
            return None
        tp, node = _tp.resolve(t)
        g = grads[0]
        if g.dtype != _tp.NP_DT[t._dtype.slot] or not g.flags.c_contiguous:
            g = np.ascontiguousarray(g, _tp.NP_DT[t._dtype.slot])
        seeds = [(node, g.reshape(-1))]
    else:
        roots = [(t, g) for t, g in zip(tensors, grads) if t._tape is not None]
        if not roots:
            return None
        tapes = {id(_tp.resolve(t)[0]): _tp.resolve(t)[0] for t, _ in roots}
        tp = _tp.join(list(tapes.values())) if len(tapes) > 1 else next(iter(tapes.values()))
        seeds = []
        for t, g in roots:
            _, node = _tp.resolve(t)
            seeds.append((node, np.ascontiguousarray(g, _tp.NP_DT[t._dtype.slot]).reshape(-1)))
    paths = per = None
    if inputs is not None:
        per = input_nodes(tp, inputs)
        paths = needed_entries(tp, [n for ns in per for n in ns], [n for n, _ in seeds])
    if paths is None:
        adj, nreach = _tp.sweep(tp, seeds, retain_graph, None, per is not None)
        return tp, adj, nreach, per, None
    with _Cut(tp, paths.cut):
        adj, nreach = _tp.sweep(tp, seeds, retain_graph, paths.needed, True)
    return tp, adj, nreach, per, paths


def input_nodes(tp, inputs):
    """The nodes of each input on tape ``tp``: [[node, ...] per input] (a leaf may have
    several after tapes joined; a tensor of another tape none)."""
    per = []
    leaves = None
    nleaf = 0
    for t in inputs:
        if t._tape is None:
            nleaf += 1
    for t in inputs:
        if t._tape is None:
            if nleaf <= 2:                 # a scan per leaf input
                per.append([n for n, ref in tp.leaf_pairs if ref() is t])
                continue
            if leaves is None:
                leaves = {}
                for n, ref in tp.leaf_pairs:
                    leaves.setdefault(id(ref()), []).append(n)
            per.append(leaves.get(id(t), []))
        else:
            ttp, node = _tp.resolve(t)
            per.append([node] if ttp is tp else [])
    return per


class Paths:
    """The entries autograd.grad runs: ``needed`` (a bool per entry) marks the entries on a
    path from a requested input; only ``lo`` .. ``hi`` can be. ``cut``: the nodes where a sweep
    from the roots leaves those paths (the requested non-leaf inputs, nodes of branches that
    do not depend on an input): made to look like leaves during the sweep (see ``_Cut``)."""
    __slots__ = ("needed", "lo", "hi", "cut")

    def __init__(self, needed, lo, hi, cut):
        self.needed, self.lo, self.hi, self.cut = needed, lo, hi, cut


def needed_entries(tp, nodes, roots):
    """Paths from the requested input ``nodes`` to the ``roots`` (nodes): entry e is needed
    when one of its inputs is a requested node or is produced by a needed entry (torch's
    engine runs only those of them that lead to the roots). None when every entry is needed
    (the inputs include every leaf of the tape: all entries descend from leaves)."""
    ne = len(tp.E) // K
    Nb = tp.N
    hi = max([Nb[n * NK + NPROD] for n in roots], default=-1)
    if not ne or hi < 0:
        return None
    lp = tp.leaf_pairs
    if len(lp) <= len(nodes) and (lp[0][0] == nodes[0] if len(lp) == 1 == len(nodes)
                                  else {n for n, _ in lp} <= set(nodes)):
        return None
    needed = np.zeros(ne, bool)
    if not nodes:
        return Paths(needed, 0, -1, np.array([n for n in roots if Nb[n * NK + NPROD] >= 0],
                                             np.int64))
    E = _tp.view_i64(tp.E).reshape(-1, K)
    # an entry's inputs are older nodes than its output: none before lo can use an input
    lo = int(np.searchsorted(E[:hi + 1, OUT], min(nodes), side="right"))
    rows = E[lo:hi + 1][:, (IA, IB, OUT, OP, P0)].tolist()
    del E
    leads = set(nodes)
    hits = []
    hit = set()
    cut = []
    for e, (a, b, out, op, p0) in enumerate(rows, lo):
        if op == _PYFUNC:
            ins = [n for n in tp.pyfuncs[p0].in_nodes if n >= 0]
        else:
            ins = (a, b)
        if leads.isdisjoint(ins):
            continue
        hits.append(e)
        hit.add(e)
        leads.add(out)
        k = out + 1                      # more output nodes (unbind parts, custom Functions)
        while k * NK < len(Nb) and Nb[k * NK + NPROD] == e:
            leads.add(k)
            k += 1
        for n in ins:                    # where a sweep from the roots leaves the paths
            if n >= 0 and Nb[n * NK + NPROD] >= 0 and Nb[n * NK + NPROD] not in hit:
                cut.append(n)
    needed[hits] = True
    if len(hits) == ne:
        return None
    cut += [n for n in roots if Nb[n * NK + NPROD] >= 0 and not needed[Nb[n * NK + NPROD]]]
    return Paths(needed, lo, hi, np.array(cut, np.int64))


class _Cut:
    """While a sweep runs, the ``cut`` nodes look like leaves to it (their producer column
    reads -1), so it stops at the requested inputs and never runs (nor frees) entries off the
    paths to them; restored afterwards."""

    def __init__(self, tp, cut):
        self.tp = tp
        self.cut = cut

    def __enter__(self):
        if self.cut.size:
            Nv = _tp.view_i64(self.tp.N).reshape(-1, NK)
            self.old = Nv[self.cut, NPROD].copy()
            Nv[self.cut, NPROD] = -1
            del Nv

    def __exit__(self, *exc):
        if self.cut.size:
            tp, cut = self.tp, self.cut
            while tp.into is not None:       # merged into another tape meanwhile (a hook)
                tp, cut = tp.into, cut + tp.dn
            Nv = _tp.view_i64(tp.N).reshape(-1, NK)
            Nv[cut, NPROD] = self.old
            del Nv
        return False


_UNUSED = ("The differentiated Tensor at index %d appears to not have been used in the graph. "
           "Set allow_unused=True if this is the desired behavior.")


def _adjoint(tp, adj, node, shape, npdt):
    g = adj.get(tp.N, node)
    if g.dtype != npdt:
        g = g.astype(npdt)
    return g.reshape(shape)


_T = None
_H = []


def _higher():
    """autograd.higher (imported on first use)."""
    if not _H:
        _H.append(higher)
    return _H[0]


def _tensor_mod():
    global _T
    if _T is None:
        import sys
        _T = sys.modules[__name__.rsplit(".", 2)[0] + ".tensor"]  # `tensor` is the function)
    return _T


def _accumulate(t, g):
    """Add ``g`` (a fresh ndarray or numpy scalar) into ``t.grad`` as torch does: a new
    tensor the first time, in place afterwards (the same .grad object sees accumulation)."""
    T = _tensor_mod()
    cur = t._grad
    if cur is None:
        t._grad = T._wrap(g, t._dtype)
    else:
        d = cur._data
        if type(d) is np.ndarray:
            d += g
        else:
            cur._data = cur._dtype.np.type(d + g)
        T._vcof(cur)[0] += 1


def _leaf_adjoints(tp, adj, nreach, only=None):
    """[(leaf, adjoint)] for the leaves of ``tp`` that received a cotangent."""
    pairs = tp.leaf_pairs
    if not pairs:
        return []
    nodes = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
    hit = np.nonzero(nreach[nodes])[0]
    if not hit.size:
        return []
    Nv = _tp.view_i64(tp.N).reshape(-1, NK)
    rows = Nv[nodes[hit], :3].tolist()
    del Nv
    out = []
    A = adj.A
    for i, (off, size, slot) in zip(hit.tolist(), rows):
        leaf = pairs[i][1]()
        if leaf is None or (only is not None and id(leaf) not in only):
            continue
        npdt = leaf._dtype.np
        d = leaf._data
        if slot < 2 and d.ndim == 0:
            g = A[slot][off]
            if g.dtype != npdt:
                g = npdt.type(g)
        else:
            g = adj.take(tp.N, int(nodes[i]))
            g = (g.astype(npdt) if g.dtype != npdt else g).reshape(d.shape)
        if "_hooks" in leaf.__dict__:
            g = leaf_hooks(leaf, g)
        out.append((leaf, g))
    return out


def backward_one(t, retain_graph):
    """``t.backward()`` of a one-element non-leaf ``t`` with the implicit cotangent, no
    ``create_graph`` nor ``inputs`` (the common case): ``backward`` without its argument
    handling; the same sweep, errors and accumulation."""
    tp = t._tape
    if tp.into is not None:
        tp, node = _tp.resolve(t)
    else:
        node = t._node
    adj, nreach = _tp.sweep_one(tp, node, retain_graph)
    pairs = tp.leaf_pairs
    if pairs:
        reached = nreach.tobytes()          # bytes index to ints, cheaper than numpy's
        Nb = tp.N
        A = adj.A
        Tensor, vcof = _T.Tensor, _T._vcof
        new = object.__new__
        for node, ref in pairs:
            if not reached[node]:
                continue
            leaf = ref()
            if leaf is None:
                continue
            b = node * NK
            slot = Nb[b + NDT]
            dt = leaf._dtype
            d = leaf._data
            if slot < 2 and dt.slot == slot:
                # a leaf's node has its dtype's store (tape.leaf_node): no conversion
                off = Nb[b + NOFF]
                if d.ndim == 0:
                    g = A[slot][off]
                else:
                    g = A[slot][off:off + Nb[b + NSIZE]].copy().reshape(d.shape)
            else:
                npdt = dt.np
                g = adj.take(Nb, node)
                g = (g.astype(npdt) if g.dtype != npdt else g).reshape(d.shape)
            hooked = "_hooks" in leaf.__dict__
            if hooked:
                g = leaf_hooks(leaf, g)
            cur = leaf._grad                # _accumulate, inlined
            if cur is None:
                gt = leaf._grad = new(Tensor)      # _wrap, inlined
                gt._data = g
                gt._dtype = dt
            else:
                cd = cur._data
                if type(cd) is np.ndarray:
                    cd += g
                else:
                    cur._data = cur._dtype.np.type(cd + g)
                vcof(cur)[0] += 1
            if hooked and "_posthooks" in leaf.__dict__:
                _post_accumulate(leaf)
    if tp.retained:
        _retained_grads(tp, adj, nreach)


def _post_accumulate(leaf, mode=False):
    """Run the leaf's post-accumulate-grad hooks (``hook(tensor)``, after ``.grad`` is
    updated; they must return None), in grad mode ``mode`` (torch's: ``create_graph``)."""
    hooks = leaf.__dict__.get("_posthooks")
    if not hooks:
        return
    prev = STATE.enabled
    STATE.enabled = mode
    try:
        for fn in list(hooks.values()):
            if fn(leaf) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
    finally:
        STATE.enabled = prev


_CYCLE_WARNED = []


def _warn_create_graph_cycle():
    """torch's engine warns once per process (TORCH_WARN_ONCE) when backward() accumulates
    into .grad with create_graph=True (autograd.grad does not)."""
    if not _CYCLE_WARNED:
        _CYCLE_WARNED.append(True)
        import warnings
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning,
            stacklevel=4)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' ``.grad`` (torch.autograd.backward).
    With ``create_graph=True`` the backward pass is recorded, so the gradients have grad_fn
    and can be differentiated again (accumulation is then out of place, as in torch)."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _seed_grads(tensors, grad_tensors)
    only = None
    if inputs is not None:
        only = {id(t) for t in _as_tuple(inputs)}
    if create_graph:
        _warn_create_graph_cycle()
        _backward_create_graph(tensors, grads, only, grad_tensors)
        return
    # leaf roots accumulate directly
    for t, g in zip(tensors, grads):
        if t._tape is None and (only is None or id(t) in only):
            g = np.array(g) if g.ndim else g[()].copy()
            if "_hooks" in t.__dict__:
                g = leaf_hooks(t, g)
            _accumulate(t, g)
            if "_posthooks" in t.__dict__:
                _post_accumulate(t)
    res = _run(tensors, grads, retain_graph)
    if res is None:
        return
    tp, adj, nreach = res[:3]
    for leaf, g in _leaf_adjoints(tp, adj, nreach, only):
        _accumulate(leaf, g)
        if "_posthooks" in leaf.__dict__:
            _post_accumulate(leaf)
    if tp.retained:
        _retained_grads(tp, adj, nreach)


def _retained_grads(tp, adj, nreach):
    """Non-leaf tensors that called retain_grad() get their gradient in .grad."""
    alive = []
    for ref in tp.retained:
        t = ref()
        if t is None:
            continue
        alive.append(ref)
        ttp, node = _tp.resolve(t) if t._tape is not None else (None, -1)
        if ttp is tp and nreach[node]:
            g = _adjoint(tp, adj, node, t._data.shape, t._dtype.np)
            _accumulate(t, g.copy() if g.ndim else g[()].copy())
    tp.retained = alive


def _graph_seeds(tensors, grads, raw):
    """(tape, [(node, flat Tensor cotangent)]) for the non-leaf roots, for create_graph."""
    T = _tensor_mod()
    if len(tensors) == 1 and not raw:       # one root, implicit cotangent: no joining
        t = tensors[0]
        if t._tape is None:
            return None, []
        tp, node = _tp.resolve(t)
        return tp, [(node, T._wrap(np.array(grads[0]).reshape(-1), t._dtype))]
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if t._tape is None:
            continue
        r = raw[i] if raw and i < len(raw) else None
        if isinstance(r, T.Tensor):
            roots.append((t, _shaped(r, (r._data.size,))))    # keeps the caller's graph
        else:
            roots.append((t, T._wrap(np.array(g).reshape(-1), t._dtype)))
    if not roots:
        return None, []
    # the roots' tapes and those of cotangents with a graph: joined now, so that the sweep's
    # recorded operations do not merge the tape it walks into another one
    tapes = {}
    for t in [t for t, _ in roots] + [g for _, g in roots if g._tape is not None]:
        tp = _tp.resolve(t)[0]
        tapes[id(tp)] = tp
    tp = _tp.join(list(tapes.values())) if len(tapes) > 1 else next(iter(tapes.values()))
    return tp, [(_tp.resolve(t)[1], g) for t, g in roots]


def _backward_create_graph(tensors, grads, only, raw):
    """create_graph backward; ``raw``: the caller's gradient tensors (kept with their graph)."""
    differentiable_sweep = _higher().differentiable_sweep
    T = _tensor_mod()
    for t, g in zip(tensors, grads):
        if t._tape is None and (only is None or id(t) in only):
            _accumulate_graph(t, T._wrap(np.array(g) if g.ndim else g[()].copy(), t._dtype))
    tp, seeds = _graph_seeds(tensors, grads, raw)
    if tp is None:
        return
    cot = differentiable_sweep(tp, seeds)
    for node, ref in list(tp.leaf_pairs):
        leaf = ref()
        if leaf is None or node not in cot or (only is not None and id(leaf) not in only):
            continue
        _accumulate_graph(leaf, _shaped(cot[node], leaf._data.shape))
    for ref in tp.retained:
        t = ref()
        if t is not None and t._tape is not None:
            node = _tp.resolve(t)[1]
            if node in cot:
                _accumulate_graph(t, _shaped(cot[node], t._data.shape))


def _shaped(t, shape):
    """A flat cotangent of the recorded sweep in the shape of its tensor, with no ViewBackward0
    in between (see higher.reshaped)."""
    return t if t._data.shape == shape else _higher().reshaped(_tensor_mod(), t, shape)


def _accumulate_graph(t, g):
    """create_graph accumulation: out of place, so the new .grad keeps its graph. The first
    gradient with a graph is a copy, as torch's: ``CopyBackwards`` (listing an undefined
    input and the gradient) for a leaf, ``CloneBackward0`` for a non-leaf that retains grad."""
    leaf = t._tape is None
    if leaf and "_hooks" in t.__dict__:
        g = leaf_hooks_tensor(t, g)
    if t._grad is not None:
        t._grad = t._grad + g
    elif g._rg and g._tape is not None:
        t._grad = _graph_copy(g, leaf)
    else:
        t._grad = g
    if leaf and "_posthooks" in t.__dict__:
        _post_accumulate(t, True)


def _graph_copy(g, leaf):
    T = _tensor_mod()
    tp, n = _tp.resolve(g)
    size, slot = g._data.size, g._dtype.slot
    if leaf:
        _, n = tp.entry(_COPY, tap_name_id("CopyBackwards", (1,)), size, slot, n, -1,
                        fl=F_HIDDEN)
        _, n = tp.entry(_COPY, multi_name_id("CopyBackwards", 2), size, slot, n, -1)
    else:
        _, n = tp.entry(_COPY, name_id("CloneBackward0"), size, slot, n, -1)
    return _out(g._data.copy(), g._dtype, tp, n)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """d(outputs)/d(inputs) as a tuple, leaving ``.grad`` untouched (torch.autograd.grad).
    With ``create_graph=True`` the results carry grad_fn and can be differentiated again.
    ``is_grads_batched``: the first dimension of each grad_output indexes a batch of cotangents;
    the results gain that dimension (one reverse sweep per cotangent)."""
    Tensor = _tensor_cls()
    if is_grads_batched:
        gos = _as_tuple(grad_outputs)
        nb = gos[0].shape[0]
        rows = []
        for i in range(nb):
            rows.append(grad(outputs, inputs, tuple(g[i] for g in gos),
                             retain_graph=True if i < nb - 1 else retain_graph,
                             create_graph=create_graph, allow_unused=allow_unused,
                             materialize_grads=materialize_grads))
        res = []
        for j, t in enumerate(_as_tuple(inputs)):
            col = [r[j] for r in rows]
            if any(c is None for c in col):
                res.append(None)
            else:
                res.append(_wrap(np.stack([np.asarray(c._data) for c in col]), t._dtype))
        return tuple(res)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _seed_grads(outputs, _as_tuple(grad_outputs), "grad")
    if create_graph:
        return _grad_create_graph(outputs, inputs, grads, _as_tuple(grad_outputs), allow_unused,
                                  materialize_grads)
    res = _run(outputs, grads, retain_graph, inputs)
    out = []
    for i, t in enumerate(inputs):
        g = None
        for o, og in zip(outputs, grads):   # a leaf input that is itself an output (a non-leaf
            if o is t and o._tape is None:  # one's seed is in its node's adjoint)
                g = og.copy() if g is None else g + og
        if res is not None:
            tp, adj, nreach, per, paths = res
            for node in per[i]:
                if nreach[node]:
                    a = _adjoint(tp, adj, node, t._data.shape, t._dtype.np)
                    g = a.copy() if g is None else g + a
            if g is not None and (tp.hooks or "_hooks" in t.__dict__):
                g = _input_hooks(t, g, tp, per[i], None if paths is None else paths.cut, False)
        elif g is not None and "_hooks" in t.__dict__:
            g = _input_hooks(t, g, None, (), None, False)
        if g is None:
            if materialize_grads:
                g = np.zeros(t._data.shape, t._dtype.np)
            elif not allow_unused:
                raise RuntimeError(_UNUSED % i)
        out.append(None if g is None else _wrap(g if g.ndim else g[()], t._dtype))
    return tuple(out)


def _input_hooks(t, g, tp, nodes, cut, graph):
    """autograd.grad: the tensor hooks of a requested input run on its gradient (``g``, an
    ndarray, or a Tensor when ``graph``), as torch: a leaf's always, a non-leaf's when the
    sweep stopped at it (``cut``: its producer did not run, so neither did its hooks)."""
    if t._tape is None:
        if "_hooks" not in t.__dict__:
            return g
        return hooks.leaf_hooks_tensor(t, g) if graph else hooks.leaf_hooks(t, g)
    if cut is None or not nodes or nodes[0] not in cut:
        return g
    table = tp.hooks.get(("t", nodes[0]))
    if not table:
        return g
    gt = g if graph else _tensor_mod()._wrap(g, t._dtype)
    prev = STATE.enabled
    STATE.enabled = bool(graph)
    try:
        for fn, _ in list(table.values()):
            r = fn(gt)
            if r is not None:
                gt = r
    finally:
        STATE.enabled = prev
    return gt if graph else gt._data


def _grad_create_graph(outputs, inputs, grads, raw, allow_unused, materialize_grads):
    differentiable_sweep = _higher().differentiable_sweep
    T = _tensor_mod()
    tp, seeds = _graph_seeds(outputs, grads, raw)
    cot = {}
    per = [()] * len(inputs)
    cut = None
    if tp is not None:
        per = input_nodes(tp, inputs)
        paths = needed_entries(tp, [n for ns in per for n in ns], [n for n, _ in seeds])
        if paths is not None:   # before the sweep: it may merge tp into another tape
            cut = [n for ns in per for n in ns
                   if tp.N[n * NK + NPROD] >= 0 and not paths.needed[tp.N[n * NK + NPROD]]]
        cot = differentiable_sweep(tp, seeds, paths)
        if tp.into is not None:
            # a custom backward recorded on a tape that absorbed tp: the cotangents are keyed
            # by tp's node numbers; the hooks now live on the absorbing tape, shifted by dn
            dn = 0
            while tp.into is not None:
                dn += tp.dn
                tp = tp.into
            per = [[n + dn for n in ns] for ns in per]
            cot = {n + dn: c for n, c in cot.items()}
            cut = None if cut is None else [n + dn for n in cut]
    res = []
    for i, t in enumerate(inputs):
        g = None
        for o, og, r in zip(outputs, grads, raw or [None] * len(outputs)):
            if o is t and o._tape is None:      # a leaf input that is itself an output
                gt = r if isinstance(r, T.Tensor) else T._wrap(np.array(og), t._dtype)
                g = gt if g is None else g + gt
        for node in per[i]:
            if node in cot:
                part = _shaped(cot[node], t._data.shape)
                g = part if g is None else g + part
        if g is not None and ((tp is not None and tp.hooks) or "_hooks" in t.__dict__):
            g = _input_hooks(t, g, tp, per[i], cut, True)
        if g is None:
            if materialize_grads:
                g = T._wrap(np.zeros(t._data.shape, t._dtype.np), t._dtype)
            elif not allow_unused:
                raise RuntimeError(_UNUSED % i)
        res.append(g)
    return tuple(res)


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    # ---- backward
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if (gradient is None and not create_graph and inputs is None and self._tape is not None
                and self._data.size == 1):
            # loss.backward(): the common case without the general argument handling
            (_ENGINE or _engine()).backward_one(self, bool(retain_graph))
            return
        (_ENGINE or _engine()).backward(self, gradient, retain_graph, create_graph, inputs=inputs)
