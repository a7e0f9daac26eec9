"""Pictures of graphs: the ``grad_fn`` graph of a tensor (as torchviz draws it) and a recorded tape.

``make_dot(y, params=dict(W=W, b=b))`` walks ``y.grad_fn`` through ``next_functions`` and draws
it with the node styles, labels and edge conventions of torchviz's ``make_dot``:

* grey boxes: backward nodes, labelled with their class name (``MulBackward0``);
* light blue: leaf tensors that require grad (the ``variable`` of an ``AccumulateGrad``),
  labelled with their name in ``params`` and their shape, with an edge into their
  ``AccumulateGrad`` box;
* orange: saved tensors (``show_saved=True``; always for a custom ``Function``'s
  ``saved_tensors``), joined to their node by an undirected edge;
* green: the tensors drawn (the outputs), dark green the base of an output that is a view
  (dotted edge).

Edges run from inputs to outputs: ``next_function -> node -> ... -> output``.

``draw_tape(f, *example_args)`` (or ``draw_tape(tape)`` for a ``tapegrad.func.make_tape``
result) draws a recorded tape: one node per entry (entry number, opcode, operands, dtype and
element count, grad_fn name), the inputs and outputs marked, the guards of the recording as
octagons attached to the nodes they read.

Large graphs stay readable: a chain of nodes that repeats a pattern (``y = y * 1.0001 +
0.001`` a thousand times) is drawn as one node ``(MulBackward0 -> AddBackward0) x 1000``
(``collapse``: the fewest repetitions that collapse, 0 to never), and at most ``max_nodes``
nodes are drawn, nearest to the outputs first, with a note saying how many were left out.

Both return a ``graphviz.Digraph`` (``pip install "tapegrad[viz]"``; rendering needs the
``dot`` program of the system's graphviz package): it shows inline in Jupyter, ``.source`` is
its DOT text, ``.pipe(format="svg")`` renders it, ``.render(path, format="png")`` writes a file.
Node names in the DOT text are stable (``n0``, ``n1``... in discovery order), so the same
graph gives the same picture.
"""
import inspect
import sys

import numpy as np

from ._core import tape as _tp
from ._schema import (BINARY, CI, F_BIG, F_FREED, F_NPFWD, F_SAVES, FL, IA, IB, K, MM, NDT, NK,
                      NPROD, NSIZE, OP, OUT, SA, SB, SY, UNARY)
from .autograd.grad_mode import no_grad
from .autograd.graph import FunctionNode
from .func import CompiledTape, make_tape
from .ops import OPS
from .tensor import Tensor

__all__ = ["make_dot", "draw_tape"]

SAVED_PREFIX = "_saved_"       # torch's grad_fn attributes for saved values
MAX_NODES = 300
COLLAPSE = 4
_NOTE_EDGES = 8               # dashed edges from the 'not drawn' note, at most
_MAX_PERIOD = 4                # longest repeated pattern looked for in a chain

# torchviz's node and graph attributes
_NODE_ATTR = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                  height="0.2", fontname="monospace")


# ----------------------------------------------------------------------------- the model
class _Graph:
    """What a picture shows, before graphviz: nodes (key -> label, attributes, signature for
    chain collapsing) and edges (src, dst, attributes), both in insertion order. Edges run
    from producers (inputs) to consumers (outputs); ``undirected`` edges attach saved values
    and guards."""

    def __init__(self):
        self.nodes = {}
        self.edges = []
        self._ekeys = set()
        self.roots = []         # the output nodes (where the node limit starts counting)

    def node(self, key, label, sig=None, chain=False, **attrs):
        """Add or update a node (as graphviz does: the last declaration's attributes win).
        ``chain``: the node may be folded into a collapsed chain; ``sig``: what must be equal
        for two nodes to count as repetitions (default: the label)."""
        self.nodes[key] = dict(label=label, sig=label if sig is None else sig, chain=chain,
                               attrs=attrs)

    def edge(self, src, dst, once=False, **attrs):
        """An edge (drawn as often as it is added, as graphviz does, unless ``once``)."""
        k = (src, dst, tuple(sorted(attrs.items())))
        if not once or k not in self._ekeys:
            self._ekeys.add(k)
            self.edges.append((src, dst, attrs))


def _size_to_str(size):
    return "(" + ", ".join("%d" % v for v in size) + ")"


def _var_label(name, shape):
    return "%s\n %s" % (name, _size_to_str(shape))


# ----------------------------------------------------------------------------- grad_fn graph
def _is_tensor(v):
    if isinstance(v, Tensor):
        return True
    try:                                        # a torch tensor in a custom Function's ctx
        torch = sys.modules.get("torch")
        return torch is not None and torch.is_tensor(v)
    except Exception:                           # pragma: no cover - a broken torch module
        return False


class _Saved:
    """A value saved by a recorded entry, read from the tape (for ``show_saved``)."""
    __slots__ = ("shape", "key", "freed")

    def __init__(self, shape, key, freed=False):
        self.shape, self.key, self.freed = tuple(shape), key, freed


def _entry_saved(fn):
    """[(name, value)] for a built-in node: the operands its VJP saves (the op table's
    ``saves`` / ``saves_fn``), named as torch names them (``self``, ``other``, ``mat2``,
    ``result``), and [(name, value)] for its scalar constant. A saved operand that is a leaf
    is that leaf tensor (torch's saved variables unpack to the original tensor, so torchviz
    draws one node for both); other operands are identified by their tape node, so values
    saved by several nodes are one node, as in torchviz. Freed values (after a backward
    without ``retain_graph``) are marked, not read."""
    tp = getattr(fn, "_tape", None)
    if tp is None or not hasattr(fn, "_entry"):
        return [], []
    tp, e = _tp.resolve_entry(tp, fn._entry)
    row = [int(v) for v in _tp.view_i64(tp.E)[e * K:(e + 1) * K]]
    N = _tp.view_i64(tp.N)
    op = OPS[row[OP]]
    a, b = row[IA], row[IB]
    if op.kind == UNARY:
        cols = [(SA, a, "self")] if "x" in op.saves else []
        cols += [(SY, None, "result")] if "y" in op.saves else []
    elif op.kind in (BINARY, MM):
        sa, sb, sy = op.saves_fn(a >= 0, b >= 0)
        other = "mat2" if op.kind == MM else "other"
        cols = [c for c, want in zip(((SA, a, "self"), (SB, b, other), (SY, None, "result")),
                                     (sa, sb, sy)) if want]
    else:
        cols = []
    freed = bool(tp.released or (row[FL] & F_FREED and row[FL] & F_SAVES))
    dt = int(N[row[OUT] * NK + NDT]) & 1
    saved = []
    for col, node, name in cols:
        code = row[col]
        if code == -1:                          # (not kept: nothing to draw)
            continue
        if freed:
            saved.append((name, _Saved((), ("freed", id(tp), e, name), freed=True)))
            continue
        arr = tp.XO[dt][-2 - code] if code <= -2 else None
        shape = np.shape(arr) if arr is not None else ()
        if node is not None and node >= 0:
            if N[node * NK + NPROD] < 0:        # a leaf: the tensor itself
                leaf = next((r() for n, r in tp.leaf_pairs if n == node), None)
                if leaf is not None:
                    saved.append((name, leaf))
                    continue
            saved.append((name, _Saved(shape, ("node", id(tp), node))))
        elif arr is not None and node is not None:  # a tensor needing no grad: its array
            saved.append((name, _Saved(shape, ("arr", id(arr)))))
        else:                                   # the result, or a number kept in V
            saved.append((name, _Saved(shape, ("entry", id(tp), e, name))))
    saved.sort(key=lambda kv: kv[0])        # in dir()'s order, as torch's attributes come
    attrs = []
    ci = row[CI]
    if op.kind in (UNARY, BINARY) and 0 <= ci < len(tp.C):
        c = tp.C[ci]
        attrs.append(("exponent" if op.name == "pow_scalar" else "scalar",
                      int(c) if float(c).is_integer() else c))
    return saved, attrs


def _fn_saved(fn):
    """[(name, value)]: the ``_saved_*`` attributes the node has (torch's nodes; tapegrad's
    own read the tape instead)."""
    out = []
    for attr in dir(fn):
        if attr.startswith(SAVED_PREFIX):
            try:
                out.append((attr[len(SAVED_PREFIX):], getattr(fn, attr)))
            except RuntimeError:                # freed
                out.append((attr[len(SAVED_PREFIX):], _Saved((), ("freed", id(fn), attr), True)))
    return out


def _fn_label(fn, show_attrs, max_attr_chars, saved, consts):
    """torchviz's get_fn_name: the class name, and with ``show_attrs`` a table of the saved
    attributes (``[saved tensor]`` for tensors, values truncated to ``max_attr_chars``)."""
    name = str(type(fn).__name__)
    if not show_attrs:
        return name
    attrs = {}
    for k, v in saved + consts:
        if _is_tensor(v) or isinstance(v, _Saved):
            attrs[k] = "[freed]" if isinstance(v, _Saved) and v.freed else "[saved tensor]"
        elif isinstance(v, tuple) and any(_is_tensor(t) for t in v):
            attrs[k] = "[saved tensors]"
        else:
            attrs[k] = str(v)
    meta = getattr(fn, "metadata", None)
    if isinstance(meta, dict):
        for k, v in meta.items():
            attrs["metadata[%r]" % (k,)] = str(v)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    col1 = max(len(k) for k in attrs)
    col2 = min(max(len(str(v)) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(col1 + col2 + 2, len(name))
    fmt = "%-" + str(col1) + "s: %" + str(col2) + "s"

    def truncate(s):
        return s[:col2 - 3] + "..." if len(s) > col2 else s
    return name + "\n" + sep + "\n" + "\n".join(fmt % (k, truncate(str(v))) for k, v in attrs.items())


def _shape_of(t):
    return tuple(t.shape)


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50, *,
             max_nodes=MAX_NODES, collapse=COLLAPSE):
    """The autograd graph of ``var`` (a tensor or a tuple of tensors) as a ``graphviz.Digraph``,
    drawn as torchviz's ``make_dot`` draws PyTorch's.

    Grey boxes are backward nodes (``grad_fn`` names); light blue nodes are the leaf tensors
    whose ``.grad`` a backward fills, named by ``params`` (a dict name -> tensor, e.g.
    ``dict(model.named_parameters())``) and shown with their shape, each above its
    ``AccumulateGrad`` box; orange nodes are saved tensors; green nodes the tensors drawn.

    Args:
        var: output tensor, or a tuple of them.
        params: dict of (name, tensor) naming the leaves that require grad.
        show_attrs: list each node's saved attributes in its box (saved tensors as
            ``[saved tensor]``, scalar constants by value, ``metadata`` entries).
        show_saved: draw the values the backward saved (``self``, ``other``, ``mat2``,
            ``result``, as torch names them) as orange nodes. A custom Function's
            ``saved_tensors`` are always drawn. Values freed by a backward are drawn
            labelled ``(freed)``.
        max_attr_chars: longest attribute value shown with ``show_attrs``.
        max_nodes: draw at most this many nodes (nearest the outputs first); the picture
            says how many were left out. ``None``: no limit.
        collapse: a chain that repeats a pattern of up to 4 nodes at least this many times
            is drawn as one node ``pattern x count``; 0 never collapses.
    """
    if params is not None:
        bad = [k for k, v in params.items() if not _is_tensor(v)]
        if bad:
            raise TypeError("make_dot: params must map names to tensors; %r is a %s"
                            % (bad[0], type(params[bad[0]]).__name__))
        param_map = {id(v): k for k, v in params.items()}
    else:
        param_map = {}
    g = _Graph()
    keys = {}
    keep = []                     # objects whose id() names a node stay alive meanwhile

    def key(obj):
        """The node name of a tensor or grad_fn (by identity) or of a saved value (by its
        key: the same tape node saved by several entries is one node)."""
        k = keys.get(obj.key if isinstance(obj, _Saved) else id(obj))
        if k is None:
            k = "n%d" % len(keys)
            if isinstance(obj, _Saved):
                keys[obj.key] = k
            else:
                keys[id(obj)] = k
                keep.append(obj)
        return k

    def var_name(t, name=None):
        if not name:
            name = param_map.get(id(t), "")
        return _var_label(name, _shape_of(t))

    def add_saved(fn, fk, saved):
        for attr, val in saved:
            if isinstance(val, _Saved):
                k = key(val)
                g.edge(fk, k, dir="none")
                g.node(k, "%s\n (freed)" % attr if val.freed else _var_label(attr, val.shape),
                       fillcolor="orange")
            elif _is_tensor(val):
                k = key(val)
                g.edge(fk, k, dir="none")
                g.node(k, var_name(val, attr), fillcolor="orange")
            elif isinstance(val, tuple):
                for i, t in enumerate(val):
                    if _is_tensor(t):
                        k = key(t)
                        g.edge(fk, k, dir="none")
                        g.node(k, var_name(t, "%s[%d]" % (attr, i)), fillcolor="orange")

    seen = set()

    def add_custom_saved(fn, fk):
        """A custom Function's ``saved_tensors`` (after its inputs, as torchviz)."""
        try:
            with no_grad():                     # the saved tensors themselves, not rebound
                st = fn.saved_tensors
        except RuntimeError:                    # freed by a backward
            k = fk + "s"
            g.edge(k, fk, dir="none")
            g.node(k, "saved_tensors\n (freed)", fillcolor="orange")
            return
        for t in st:
            if t is None:
                continue
            tk = key(t)
            seen.add(id(t))
            g.edge(tk, fk, dir="none")
            g.node(tk, var_name(t), fillcolor="orange")

    def add_nodes(root):
        # torchviz's recursive walk, with a stack: a node, then each next_function's subgraph
        # in order, then the node's custom saved tensors
        stack = [root]
        while stack:
            fn = stack.pop()
            if type(fn) is tuple:               # ("after", fn, key): the post-order step
                add_custom_saved(fn[1], fn[2])
                continue
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            fk = key(fn)
            saved, consts = [], []
            if show_saved or show_attrs:
                saved = _fn_saved(fn)
                if not saved:
                    saved, consts = _entry_saved(fn)
            if show_saved:
                add_saved(fn, fk, saved)
            if hasattr(fn, "variable"):
                variable = fn.variable
                if variable is not None:
                    vk = key(variable)
                    seen.add(id(variable))
                    g.node(vk, var_name(variable), fillcolor="lightblue")
                else:                           # a dropped leaf (its grad goes nowhere)
                    vk = fk + "v"
                    g.node(vk, "(freed leaf)", fillcolor="lightblue")
                g.edge(vk, fk)
            g.node(fk, _fn_label(fn, show_attrs, max_attr_chars, saved, consts),
                   chain=not hasattr(fn, "variable"))
            nexts = [u for u, _ in getattr(fn, "next_functions", ())]
            for u in nexts:
                if u is not None:
                    g.edge(key(u), fk)
            if _has_saved_tensors(fn):
                stack.append(("after", fn, fk))
            stack.extend(u for u in reversed(nexts) if u is not None)

    def add_base_tensor(t, color="darkolivegreen1"):
        if id(t) in seen:
            return
        seen.add(id(t))
        tk = key(t)
        g.node(tk, var_name(t), fillcolor=color)
        if color == "darkolivegreen1":
            g.roots.append(tk)
        fn = t.grad_fn
        if fn is not None:
            add_nodes(fn)
            g.edge(key(fn), tk)
        base = getattr(t, "_base", None)
        if base is not None and _is_tensor(base):
            add_base_tensor(base, color="darkolivegreen3")
            g.edge(key(base), tk, style="dotted")

    for t in (var if isinstance(var, tuple) else (var,)):
        add_base_tensor(t)
    g = _collapse(g, collapse)
    return _to_digraph(g, max_nodes)


def _has_saved_tensors(fn):
    if isinstance(fn, FunctionNode):
        return True
    return "saved_tensors" in dir(type(fn))     # (torch's custom Function nodes)


# ----------------------------------------------------------------------------- tape picture
def _arg_names(f, in_spec):
    """Names of the recorded inputs, in leaf order: the parameters of ``f`` when it has a
    signature (``w``, ``params[0][1]``), else ``args[i]``."""
    names = []
    try:
        pnames = [p.name for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        pnames = []

    def walk(spec, path):
        kind = spec[0]
        if kind == "T":
            names.append(path)
        elif kind in ("tuple", "list"):
            for i, s in enumerate(spec[1]):
                walk(s, "%s[%d]" % (path, i))
        elif kind == "dict":
            for k, s in zip(spec[1], spec[2]):
                walk(s, "%s[%r]" % (path, k))
    args_spec, kw_spec = in_spec[1]
    for i, s in enumerate(args_spec[1]):
        walk(s, pnames[i] if i < len(pnames) else "args[%d]" % i)
    for k, s in zip(kw_spec[1], kw_spec[2]):
        walk(s, k)
    return names


def _guard_text(g, node_name):
    kind, f, a, b, seen = g

    def operand(spec):
        if spec is None:
            return "?"
        if spec[0] == "node":
            return node_name(spec[1])
        v = np.asarray(spec[1])
        return np.array2string(v, threshold=4, edgeitems=1) if v.ndim else repr(v.item())

    def value(v):
        v = np.asarray(v)
        return repr(v.item()) if v.size == 1 else "%s[%d]" % (v.dtype, v.size)
    if kind == "cmp":
        fname = getattr(f, "__name__", str(f))
        return "guard %s(%s, %s)\n== %s" % (fname, operand(a), operand(b), value(seen))
    if kind == "sel":
        if a is None:
            return "guard: random draw\n(never replayed)"
        return "guard %s(%s)\nsame as recorded" % (f[0], operand(a))
    return "guard item(%s)\n== %s" % (operand(a), value(seen))


def draw_tape(tape_or_f, *example_args, max_nodes=MAX_NODES, collapse=COLLAPSE, **example_kwargs):
    """A picture of a recorded tape (what ``tapegrad.func`` replays) as a ``graphviz.Digraph``.

    ``draw_tape(f, *example_args, **example_kwargs)`` records ``f`` on the example arguments
    (``tapegrad.func.make_tape``); ``draw_tape(tape)`` draws an already recorded
    ``CompiledTape``. One box per entry, as ``print(tape)`` lists them: ``#entry opcode(operands)``
    with the output node's dtype and element count, and the grad_fn name (entries that replay
    on numpy say so). Inputs are light blue (named after ``f``'s parameters when ``f`` is
    given), tensors ``f`` captured orange, outputs green, all with their shapes; each guard (a
    decision taken from a value while recording: comparisons, ``item()``, orderings) is a
    yellow octagon joined to the nodes it reads. ``max_nodes`` and ``collapse`` as in
    ``make_dot``: a repeated chain of entries becomes one box ``pattern x count``.
    """
    if isinstance(tape_or_f, CompiledTape):
        if example_args or example_kwargs:
            raise TypeError("draw_tape: a recorded tape takes no example arguments")
        ct, names = tape_or_f, None
    elif callable(tape_or_f):
        ct = make_tape(tape_or_f, *example_args, **example_kwargs)
        names = _arg_names(tape_or_f, ct.in_spec)
    else:
        raise TypeError("draw_tape: expected a function (and example arguments) or a "
                        "CompiledTape from tapegrad.func.make_tape, got %s"
                        % type(tape_or_f).__name__)
    E = ct.E.reshape(-1, K)
    N = ct.N.reshape(-1, NK)
    inputs = {int(n): i for i, n in enumerate(ct.in_nodes) if n is not None}
    captured = {int(node): np.asarray(kept) for node, _, kept in ct.captured}

    # the listing's names: inputs in<i>, other nodes n<node>, missing operands const
    special = {n: "in%d" % i for n, i in inputs.items()}
    special[-1] = "const"
    dtypes = np.where(N[:, NDT] & 1, "f64", "f32")

    def nname(node):
        return special.get(node, "n%d" % node)

    def dsize(node):
        return "%s[%d]" % (dtypes[node], N[node, NSIZE])
    g = _Graph()
    for node, i in sorted(inputs.items(), key=lambda x: x[1]):
        shape, dt = ct.in_meta[i]
        nm = names[i] if names is not None and i < len(names) else ""
        g.node("i%d" % i, "in%d %s\n %s %s" % (i, nm, dt.name, _size_to_str(shape)),
               fillcolor="lightblue")
    for node, kept in sorted(captured.items()):
        g.node("c%d" % node, "%s (captured)\n %s %s" % (nname(node), kept.dtype.name,
                                                        _size_to_str(kept.shape)),
               fillcolor="orange")

    def src(node):
        """Graph key of what produces ``node`` (None for a constant)."""
        if node < 0:
            return None
        if node in inputs:
            return "i%d" % inputs[node]
        prod = int(N[node, NPROD])
        if prod < 0:
            return "c%d" % node if node in captured else None
        return "e%d" % prod
    for e in range(ct.ne):
        op, gname = ct.names[e]
        out, a, b = int(E[e, OUT]), int(E[e, IA]), int(E[e, IB])
        two = OPS[int(E[e, OP])].kind in (BINARY, MM) or op in ("add", "sub", "mul", "div", "pow", "mm")
        args = "%s, %s" % (nname(a), nname(b)) if two else nname(a)
        flag = ("\n(numpy)" if E[e, FL] & F_BIG else
                "\n(numpy forward)" if E[e, FL] & F_NPFWD else "")
        label = "#%d %s(%s)\n%s = %s\n%s%s" % (e, op, args, nname(out), dsize(out), gname, flag)
        sig = "%s(%s)\n%s\n%s%s" % (op, ", ".join(
            "const" if n < 0 else "x" for n in ((a, b) if two else (a,))), dsize(out), gname, flag)
        g.node("e%d" % e, label, sig=sig, chain=True)
        for n in ((a, b) if two else (a,)):
            s = src(n)
            if s is not None:
                g.edge(s, "e%d" % e)
    for i, (kind, v) in enumerate(ct.out_nodes):
        shape, dt = ct.out_meta[i]
        k = "o%d" % i
        g.node(k, "out%d\n %s %s" % (i, dt.name, _size_to_str(shape)), fillcolor="darkolivegreen1")
        g.roots.append(k)
        if kind == "node":
            s = src(int(v))
            if s is not None:
                g.edge(s, k)
        elif kind == "input":
            g.edge("i%d" % v, k)
    for gi, guard in enumerate(ct.guards):
        k = "g%d" % gi
        g.node(k, _guard_text(guard, nname), shape="octagon", fillcolor="lightyellow")
        g.roots.append(k)
        for spec in (guard[2], guard[3]):
            if spec is not None and spec[0] == "node":
                s = src(int(spec[1]))
                if s is not None:
                    g.edge(s, k, style="dashed")
    g = _collapse(g, collapse)
    dot = _to_digraph(g, max_nodes)
    dot.attr(label="CompiledTape: %d entries, %d nodes, %d guards, %.1f KiB"
             % (ct.ne, len(N), len(ct.guards), ct.nbytes / 1024), labelloc="t",
             fontname="monospace", fontsize="10")
    return dot


# ----------------------------------------------------------------------------- readability
def _collapse(g, min_repeat):
    """Fold repeated chains: a maximal path of ``chain`` nodes, each the only consumer of the
    one before and fed by it alone among the chain nodes, in which a pattern of 1-4 node
    signatures repeats at least ``min_repeat`` times with the same other inputs, becomes one
    node. Saved values and attached guards of the folded nodes are dropped (the label says
    so); edges from outside are kept once."""
    if not min_repeat or min_repeat < 2:
        return g
    cons, prods = {}, {}
    attached = {}                               # node -> keys joined to it by undirected edges
    directed = set()
    for s, d, a in g.edges:
        if a.get("dir") == "none":
            attached.setdefault(s, []).append(d)
            attached.setdefault(d, []).append(s)
            continue
        directed.update((s, d))
        cons.setdefault(s, []).append(d)
        prods.setdefault(d, []).append(s)
    ch = {k for k, v in g.nodes.items() if v["chain"]}

    def chain_prod(k):
        ps = [p for p in prods.get(k, ()) if p in ch]
        return ps[0] if len(ps) == 1 else None

    def nxt(k):
        cs = cons.get(k, ())
        if len(cs) == 1 and cs[0] in ch and chain_prod(cs[0]) == k:
            return cs[0]
        return None
    starts = [k for k in g.nodes if k in ch and not (chain_prod(k) and nxt(chain_prod(k)) == k)]
    groups = {}                                 # member -> (collapsed key, label)
    for st in starts:
        path = [st]
        while True:
            n = nxt(path[-1])
            if n is None or n == st:
                break
            path.append(n)
        if len(path) < min_repeat:
            continue

        on = set(path)
        # what must repeat: each node's signature and its inputs from outside the chain (the
        # first node's are not compared: one of them is what feeds the chain)
        sigs = [(g.nodes[k]["sig"], None if j == 0 else
                 tuple(sorted(p for p in prods.get(k, ()) if p not in on)))
                for j, k in enumerate(path)]

        def same(u, v):
            return u[0] == v[0] and (u[1] is None or v[1] is None or u[1] == v[1])

        def repeats(i, p):
            r = 1
            while i + (r + 1) * p <= len(path) and all(
                    same(sigs[i + r * p + j], sigs[i + j]) for j in range(p)):
                r += 1
            return r
        i = 0
        while i < len(path):
            best = (0, 1)
            for p in range(1, _MAX_PERIOD + 1):
                r = repeats(i, p)
                if r >= min_repeat and r * p > best[0] * best[1]:
                    best = (r, p)
            r, p = best
            if not r:
                i += 1
                continue
            members = path[i:i + r * p]
            pat = [g.nodes[k]["sig"].split("\n")[0] for k in members[:p]]
            head = pat[0] if p == 1 else "(" + " -> ".join(pat) + ")"
            label = "%s x %d" % (head, r)
            if g.nodes[members[0]]["sig"] != g.nodes[members[0]]["label"]:
                label += "\n%s .. %s" % (g.nodes[members[0]]["label"].split("\n")[0].split(" ")[0],
                                         g.nodes[members[-1]]["label"].split("\n")[0].split(" ")[0])
            if any(attached.get(k) for k in members):
                label += "\n(saved values not drawn)"
            ck = "k" + members[0]
            for k in members:
                groups[k] = (ck, label)
            i += r * p
    if not groups:
        return g
    # saved values attached only to folded nodes go with them
    dropped = {d for k in groups for d in attached.get(k, ())
               if d not in directed and all(x in groups for x in attached[d])}
    out = _Graph()
    out.roots = [groups.get(k, (k,))[0] for k in g.roots]
    for k, v in g.nodes.items():
        if k in groups:
            ck, label = groups[k]
            if ck not in out.nodes:
                out.node(ck, label, chain=False, style="filled,dashed", fillcolor="lightgrey")
        elif k not in dropped:
            out.nodes[k] = v
    for s, d, a in g.edges:
        if s in dropped or d in dropped:
            continue
        s2, d2 = groups.get(s, (s,))[0], groups.get(d, (d,))[0]
        if s2 == d2:
            continue
        out.edge(s2, d2, once=s2 != s or d2 != d, **a)
    return out


def _to_digraph(g, max_nodes):
    """The graphviz Digraph of ``g`` with torchviz's attributes, keeping the ``max_nodes``
    nodes nearest the outputs (breadth first against the edges) and a note for the rest."""
    try:
        from graphviz import Digraph  # deferred: an optional extra (pip install "tapegrad[viz]")
    except ImportError:
        raise ImportError('tapegrad.viz needs the graphviz package: pip install "tapegrad[viz]" '
                          "(and the dot program: apt-get install graphviz)") from None
    keep = set(g.nodes)
    left_out = 0
    if max_nodes is not None and len(g.nodes) > max_nodes:
        near = {}
        for s, d, a in g.edges:
            near.setdefault(d, []).append(s)
            if a.get("dir") == "none":
                near.setdefault(s, []).append(d)
        # breadth first from the outputs; nodes no output reaches come last
        order, seen, i = list(g.roots), set(g.roots), 0
        while i < len(order):
            for s in near.get(order[i], ()):
                if s not in seen:
                    seen.add(s)
                    order.append(s)
            i += 1
        order += [k for k in g.nodes if k not in seen]
        keep = set(order[:max_nodes])
        left_out = len(g.nodes) - len(keep)
    dot = Digraph(node_attr=dict(_NODE_ATTR), graph_attr=dict(size="12,12"))
    for k, v in g.nodes.items():
        if k in keep:
            dot.node(k, v["label"], **v["attrs"])
    cut = []
    for s, d, a in g.edges:
        if s in keep and d in keep:
            dot.edge(s, d, **a)
        elif d in keep and a.get("dir") != "none":
            cut.append(d)
    if left_out:
        targets = list(dict.fromkeys(cut))
        note = "... %d more nodes not drawn (max_nodes=%d)" % (left_out, max_nodes)
        if len(targets) > _NOTE_EDGES:
            note += "\nthey feed %d drawn nodes; %d edges shown" % (len(targets), _NOTE_EDGES)
        dot.node("more", note, shape="note", style="filled,dashed", fillcolor="white")
        for d in targets[:_NOTE_EDGES]:
            dot.edge("more", d, style="dashed")
    _resize(dot)
    return dot


def _resize(dot, size_per_element=0.15, min_size=12):
    """torchviz's resize_graph: the drawing's size grows with its content."""
    size = max(min_size, len(dot.body) * size_per_element)
    dot.graph_attr.update(size="%s,%s" % (size, size))
