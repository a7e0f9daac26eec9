"""Views of the recorded graph with PyTorch's shape: grad_fn nodes, next_functions, AccumulateGrad.

Nothing here exists per recorded op: a ``Node`` view is made the first time someone looks at
an entry's ``grad_fn`` and is then cached on the tape, so ``a.grad_fn is b.grad_fn`` holds for
outputs of one entry. Each grad_fn name (``MulBackward0``) is its own subclass of ``Node`` so
``type(node).__name__`` reads as in torch.
"""
from ..kernels import F_HIDDEN, FL, IA, IB, K, NK, NM, NNR, NPROD, OP
from ..ops import BINARY, MM, OPS, PYFUNC
from ..tape import resolve_entry, view_i64

NAMES = []
_NAME_ID = {}
# binary entries recorded with a constant operand whose torch node has a single input
ONE_INPUT = {"RsubBackward1", "PowBackward2", "FillBackward2", "ZeroBackward0"}
# nodes torch implements in C++ report a qualified name()
_CPP_NAMES = {"CopySlices": "torch::autograd::CopySlices",
              "CopyBackwards": "torch::autograd::CopyBackwards"}


def name_id(name):
    i = _NAME_ID.get(name)
    if i is None:
        i = _NAME_ID[name] = len(NAMES)
        NAMES.append(name)
    return i


for _op in OPS:
    name_id(_op.grad_fn)

# Composite nodes with n inputs (cat/stack of n tensors, losses over (input, target)): the top
# entry's name id carries the arity, and hidden *tap* entries below it record which input slot
# each of their operands is; next_functions lists the n slots ((None, 0) where no tap is found,
# i.e. the input needs no grad), as torch's CatBackward0 / MseLossBackward0 do.
ARITY = {}      # name id -> number of inputs
TAPS = {}       # name id -> (slot of operand a, slot of operand b); -1: not a slot


def multi_name_id(name, arity):
    """The id of ``name`` for a top entry whose node lists ``arity`` inputs (found by taps)."""
    key = (name, "n", int(arity))
    i = _NAME_ID.get(key)
    if i is None:
        i = _NAME_ID[key] = len(NAMES)
        NAMES.append(name)
        ARITY[i] = int(arity)
    return i


def tap_name_id(name, slots):
    """The id of ``name`` for a hidden entry whose operands are the inputs ``slots`` of the
    composite node above it (e.g. (0, 1): a is input 0, b input 1)."""
    key = (name, "tap", tuple(slots))
    i = _NAME_ID.get(key)
    if i is None:
        i = _NAME_ID[key] = len(NAMES)
        NAMES.append(name)
        TAPS[i] = tuple(slots)
    return i


class Node:
    """A backward node (``grad_fn``) of a recorded entry."""
    __slots__ = ("_tape", "_entry", "__weakref__")

    def name(self):
        n = type(self).__name__
        return _CPP_NAMES.get(n, n)

    @property
    def next_functions(self):
        tp, e = resolve_entry(self._tape, self._entry)
        self._tape, self._entry = tp, e
        return next_functions(tp, e)

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


_CLASSES = {}


def node_class(name):
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (Node,), {"__slots__": ()})
    return cls


def entry_name(tp, e):
    return NAMES[int(view_i64(tp.E)[e * K + NM])]


def node_view(tp, e):
    v = tp.views.get(e)
    if v is None:
        v = object.__new__(node_class(entry_name(tp, e)))
        v._tape, v._entry = tp, e
        tp.views[e] = v
    return v


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
                    return (accumulate_grad(leaf) if leaf is not None else None), 0
            return None, 0
        if E[prod, FL] & F_HIDDEN:
            node = int(E[prod, IA])
            continue
        return node_view(tp, prod), int(N[node, NNR])


def _operands(E, e):
    kind = OPS[int(E[e, OP])].kind
    if kind in (BINARY, MM):
        return (int(E[e, IA]), int(E[e, IB]))
    if kind == PYFUNC:
        return ()
    return (int(E[e, IA]),)


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
