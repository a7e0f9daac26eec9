"""Views of the recorded graph with PyTorch's shape: grad_fn nodes, next_functions, AccumulateGrad.

Nothing here exists per recorded op: a ``Node`` view is made the first time someone looks at
an entry's ``grad_fn`` and is then cached on the tape, so ``a.grad_fn is b.grad_fn`` holds for
outputs of one entry. Each grad_fn name (``MulBackward0``) is its own subclass of ``Node`` so
``type(node).__name__`` reads as in torch.
"""
import weakref

from .._schema import F_HIDDEN, FL, IA, IB, K, NK, NM, NNR, NPROD, NSIZE, OP, OUT, P0
from ..ops import BINARY, MM, OPS, PYFUNC, UNARY
from .._core.names import (_CPP_NAMES, _FUNCTION_NAMES, ARITY, CHAIN, NAMES, ONE_INPUT, TAPS,  # noqa: F401
                           chain_name_id, function_name_id, multi_name_id, name_id,
                           tap_name_id)
from .._core.tape import _operands, entry_name, resolve_entry, view_i64
from .._core import tape as _tp
from .._record import _CAST_OP

class Node:
    """A backward node (``grad_fn``) of a recorded entry. ``_oshape``: the shape of its output
    when known (read from a tensor's grad_fn, or passed down elementwise entries by
    next_functions): node hooks give gradients that shape, as torch."""
    __slots__ = ("_tape", "_entry", "_oshape", "__weakref__")

    def name(self):
        n = type(self).__name__
        return _CPP_NAMES.get(n, n)

    @property
    def next_functions(self):
        tp, e = resolve_entry(self._tape, self._entry)
        self._tape, self._entry = tp, e
        res = next_functions(tp, e)
        shape = getattr(self, "_oshape", None)
        if shape is not None and OPS[int(view_i64(tp.E)[e * K + OP])].kind in (UNARY, BINARY):
            for fn, _ in res:          # elementwise: an input of the same size has its shape
                if isinstance(fn, Node) and getattr(fn, "_oshape", None) is None:
                    _, fe = resolve_entry(fn._tape, fn._entry)
                    N = view_i64(tp.N)
                    if N[int(view_i64(tp.E)[fe * K + OUT]) * NK + NSIZE] == _numel(shape):
                        fn._oshape = shape
        return res

    @property
    def metadata(self):
        return {}

    def __repr__(self):
        return "<%s object at %#x>" % (type(self).__name__, id(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("calling a grad_fn node directly is not supported by tapegrad")


class AccumulateGrad:
    """The node that accumulates into a leaf's ``.grad``."""
    __slots__ = ("variable", "__weakref__")
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    @property
    def metadata(self):
        return {}

    def __repr__(self):
        return "<AccumulateGrad object at %#x>" % id(self)


class InnerNode:
    """A node of a chain (see CHAIN) below an entry's top node: its next_functions go on down
    the chain, the last one's to the entry's inputs. (No hooks: tapegrad has no such node.)"""
    __slots__ = ("_top", "_depth", "__weakref__")

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return _chain_next(self._top, self._depth)

    @property
    def metadata(self):
        return {}

    def __repr__(self):
        return "<%s object at %#x>" % (type(self).__name__, id(self))


_INNER = weakref.WeakKeyDictionary()     # top node view -> {depth: InnerNode} (stable identity)
_INNER_CLASSES = {}


def _chain_next(top, depth):
    tp, e = resolve_entry(top._tape, top._entry)
    top._tape, top._entry = tp, e
    E = view_i64(tp.E).reshape(-1, K)
    chain = CHAIN.get(int(E[e, NM]), ())
    if depth >= len(chain):
        return _inputs(tp, E, e)
    kids = _INNER.get(top)
    if kids is None:
        kids = _INNER[top] = {}
    v = kids.get(depth)
    if v is None:
        name = chain[depth]
        cls = _INNER_CLASSES.get(name)
        if cls is None:
            cls = _INNER_CLASSES[name] = type(name, (InnerNode,), {"__slots__": ()})
        v = kids[depth] = object.__new__(cls)
        v._top, v._depth = top, depth + 1
    return ((v, 0),)


class FunctionNode(Node):
    """The node of a custom ``Function`` (``<Name>Backward``): prints as torch's
    (``<torch.autograd.function.NameBackward object at 0x...>``) and, as torch's node that is
    also the ``ctx``, reads the ctx's attributes (``saved_tensors``, ``needs_input_grad``,
    anything ``forward`` stored)."""
    __slots__ = ()

    def __repr__(self):
        return "<torch.autograd.function.%s object at %#x>" % (type(self).__name__, id(self))

    def _record(self):
        tp, e = resolve_entry(self._tape, self._entry)
        return tp.pyfuncs[int(view_i64(tp.E)[e * K + P0])]

    @property
    def _forward_cls(self):
        return self._record().cls

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._record().ctx, name)


_CLASSES = {}
def node_class(name):
    cls = _CLASSES.get(name)
    if cls is None:
        base = FunctionNode if name in _FUNCTION_NAMES else Node
        cls = _CLASSES[name] = type(name, (base,), {"__slots__": ()})
    return cls


def node_view(tp, e, shape=None):
    """The grad_fn view of entry ``e`` (``shape``: of the tensor it was read from)."""
    v = tp.views.get(e)
    if v is None:
        v = object.__new__(node_class(entry_name(tp, e)))
        v._tape, v._entry = tp, e
        tp.views[e] = v
    if shape is not None:
        v._oshape = shape
    return v


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def accumulate_grad(leaf):
    acc = leaf._acc
    if acc is None:
        acc = leaf._acc = AccumulateGrad(leaf)
    return acc


def _producer(tp, E, N, node):
    """(grad_fn view or AccumulateGrad, output_nr) feeding ``node``, skipping hidden entries."""
    while True:
        prod = int(N[node, NPROD])
        if prod < 0:
            for n, ref in tp.leaf_pairs:
                if n == node:
                    leaf = ref()
                    # a dropped leaf (the tape holds leaves weakly; torch's AccumulateGrad
                    # keeps its variable alive): still an AccumulateGrad, its variable None
                    return (accumulate_grad(leaf) if leaf is not None else AccumulateGrad(None)), 0
            return None, 0
        if E[prod, FL] & F_HIDDEN:
            node = int(E[prod, IA])
            continue
        return node_view(tp, prod), int(N[node, NNR])


def _slots(tp, E, N, e, arity):
    """next_functions of a composite top entry with ``arity`` inputs: search its hidden subtree
    for tap entries and read the input slots off them."""
    out = [(None, 0)] * arity
    seen = set()
    todo = [e]
    while todo:
        x = todo.pop()
        for n in _operands(E, x):
            if n < 0:
                continue
            p = int(N[n, NPROD])
            if p < 0 or not (E[p, FL] & F_HIDDEN) or p in seen:
                continue
            seen.add(p)
            slots = TAPS.get(int(E[p, NM]))
            if slots is None:
                todo.append(p)
                continue
            for k, m in zip(slots, _operands(E, p)):
                if 0 <= k < arity and m >= 0:
                    out[k] = _producer(tp, E, N, m)
    return tuple(out)


def next_functions(tp, e):
    E = view_i64(tp.E).reshape(-1, K)
    nid = int(E[e, NM])
    if nid in CHAIN:
        return _chain_next(node_view(tp, e), 0)
    return _inputs(tp, E, e)


def _inputs(tp, E, e):
    N = view_i64(tp.N).reshape(-1, NK)
    arity = ARITY.get(int(E[e, NM]))
    if arity is not None:
        return _slots(tp, E, N, e, arity)
    op = OPS[int(E[e, OP])]
    name = NAMES[int(E[e, NM])]
    if op.kind == PYFUNC:
        rec = tp.pyfuncs[int(E[e, 8])]
        ins = [n for n, (_, dt) in zip(rec.in_nodes, rec.in_meta) if dt is not None]
    elif name in ONE_INPUT:       # e.g. 2 - x (RsubBackward1): torch lists the tensor only
        ins = (int(E[e, IB]) if E[e, IA] < 0 else int(E[e, IA]),)
    elif op.kind in (BINARY, MM):
        ins = (int(E[e, IA]), int(E[e, IB]))
    else:
        ins = (int(E[e, IA]),)
    return tuple((None, 0) if n < 0 else _producer(tp, E, N, n) for n in ins)


# ----------------------------------------------------------------- saved-tensor hooks
class saved_tensors_hooks:
    """torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook): not supported.
    tapegrad saves operands as raw arrays inside the tape, read by the compiled sweep, so there
    is no point where a pack/unpack hook could run; it raises rather than silently ignore the
    hooks."""

    def __init__(self, pack_hook, unpack_hook):
        raise NotImplementedError(
            "tapegrad does not support torch.autograd.graph.saved_tensors_hooks: saved values "
            "live in the tape's buffers and are read by the compiled backward sweep, so "
            "pack/unpack hooks cannot be called")


class save_on_cpu:
    """torch.autograd.graph.save_on_cpu: saved tensors are on the CPU already (a no-op
    context manager)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class disable_saved_tensors_hooks:
    """torch.autograd.graph.disable_saved_tensors_hooks(error_message): there are no saved
    tensor hooks in tapegrad, so nothing to disable (a no-op context manager)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    @property
    def grad_fn(self):
        if self._tape is None:
            return None
        tp, node = _tp.resolve(self)
        e = tp.N[node * NK + NPROD]
        if tp.E[e * K + FL] & F_HIDDEN and tp.E[e * K] == _CAST_OP:
            # an in-place op's result cast to its target's dtype (y += float64): torch's node
            # is the op's
            e = tp.N[tp.E[e * K + IA] * NK + NPROD]
        return node_view(tp, e, self._data.shape)
