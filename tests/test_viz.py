"""tapegrad.viz: pictures rendered with graphviz's ``dot`` and read back from the SVG.

Each picture's nodes and edges (as label pairs) are compared with what an independent walk of
the graph says torchviz would draw: over tapegrad's ``grad_fn`` graph, over torch's for the
same program when torch is installed, and with torchviz's own SVG when torchviz is installed.
Tape pictures are compared with the tape's listing (``print(make_tape(f, ...))``).
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf

# .ci/run installs graphviz and dot and sets TAPEGRAD_SITE_TESTS=require: then they must be here
REQUIRED = os.environ.get("TAPEGRAD_SITE_TESTS") == "require"
try:
    import graphviz
except ImportError:
    if REQUIRED:
        raise
    pytest.skip("the graphviz package is not installed", allow_module_level=True)
if shutil.which("dot") is None:
    if REQUIRED:
        raise RuntimeError("graphviz's dot program is missing (TAPEGRAD_SITE_TESTS=require)")
    pytest.skip("graphviz's dot program is not installed", allow_module_level=True)

from tapegrad import viz  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


# ----------------------------------------------------------------------------- reading pictures
def rendered(dot):
    """(Counter of node labels, Counter of (src label, dst label) edges, {title: label}) read
    from the SVG that ``dot`` renders; a label's lines are stripped and joined by newlines."""
    root = ET.fromstring(dot.pipe(format="svg"))
    labels, edges = {}, []
    for g in root.iter(SVG + "g"):
        title = g.find(SVG + "title")
        if g.get("class") == "node":
            labels[title.text] = "\n".join((t.text or "").strip() for t in g.findall(SVG + "text"))
        elif g.get("class") == "edge":
            edges.append(title.text)
    pairs = []
    for e in edges:
        s, d = e.split("->")
        pairs.append((labels[s], labels[d]))
    return collections.Counter(labels.values()), collections.Counter(pairs), labels


def expected(var, params):
    """What torchviz draws for ``var`` without saved values, by a walk of its grad_fn graph
    (next_functions, AccumulateGrad.variable, a custom Function's saved_tensors, the base of
    an output that is a view): node labels and edges as label pairs. Works on tapegrad's and
    torch's graphs alike."""
    names = {id(v): k for k, v in params.items()}
    labels, edges, seen = {}, [], set()

    def tensor_label(t):
        return "%s\n(%s)" % (names.get(id(t), ""), ", ".join(str(s) for s in t.shape))

    def walk(fn):
        if id(fn) in seen:
            return
        seen.add(id(fn))
        labels[id(fn)] = type(fn).__name__
        if hasattr(fn, "variable"):
            labels[id(fn.variable)] = tensor_label(fn.variable)
            edges.append((id(fn.variable), id(fn)))
        for u, _ in fn.next_functions:
            if u is not None:
                edges.append((id(u), id(fn)))
                walk(u)
        if hasattr(fn, "saved_tensors"):
            for t in fn.saved_tensors:
                keep.append(t)
                labels[id(t)] = tensor_label(t)
                edges.append((id(t), id(fn)))
    keep = []

    def output(t):                      # an output, and the base of an output that is a view
        if id(t) in seen:
            return
        seen.add(id(t))
        labels[id(t)] = tensor_label(t).lstrip("\n")
        if t.grad_fn is not None:
            walk(t.grad_fn)
            edges.append((id(t.grad_fn), id(t)))
        if t._base is not None:
            output(t._base)
            edges.append((id(t._base), id(t)))
    for t in (var if isinstance(var, tuple) else (var,)):
        output(t)
    return (collections.Counter(labels.values()),
            collections.Counter((labels[s], labels[d]) for s, d in edges))


def fix(counter):
    """Labels as the SVG reads them: a nameless tensor's first (empty) line is dropped."""
    return collections.Counter({k.lstrip("\n") if not isinstance(k, tuple) else
                                tuple(x.lstrip("\n") for x in k): v for k, v in counter.items()})


# ----------------------------------------------------------------------------- programs
def mlp(lib):
    g = np.random.default_rng(0)
    W1 = lib.tensor(g.standard_normal((3, 4)), requires_grad=True)
    b1 = lib.tensor(g.standard_normal(4), requires_grad=True)
    W2 = lib.tensor(g.standard_normal((4, 2)), requires_grad=True)
    x = lib.tensor(g.standard_normal((5, 3)))
    y = ((x @ W1 + b1).relu() @ W2).softmax(1)
    return (y[:, 0] - 0.5).pow(2).mean(), dict(W1=W1, b1=b1, W2=W2)


def custom(lib):
    class ScaledTanh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = (x * scale).tanh()
            ctx.scale = scale
            ctx.save_for_backward(y)                # its own output
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * ctx.scale * (1 - y * y), None
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return (ScaledTanh.apply(a.sin(), 0.5) * a).sum(), dict(a=a)


def double(lib):
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = (x.sin() * x.exp()).sum()
    g, = lib.autograd.grad(y, x, create_graph=True)
    return g, dict(x=x)


def view_out(lib):
    x = lib.tensor([[0.5, 1.0], [2.0, 3.0]], requires_grad=True)
    return (x * 2)[0], dict(x=x)


def two_outputs(lib):
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    return (x.sin(), x.cos() * x), dict(x=x)


def shared_saved(lib):
    x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
    w = lib.tensor([1.5, -1.0, 0.5], requires_grad=True)
    h = x * w                                   # saved by sin and by cos: one node
    return (h.sin() + h.cos() * 2 + x.exp() + x * x).sum(), dict(x=x, w=w)


PROGRAMS = [mlp, custom, double, view_out, two_outputs, shared_saved]


# ----------------------------------------------------------------------------- grad_fn graphs
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__)
def test_make_dot_draws_the_grad_fn_graph(prog):
    var, params = prog(tg)
    nodes, edges, _ = rendered(viz.make_dot(var, params=params))
    want_nodes, want_edges = expected(var, params)
    assert nodes == fix(want_nodes)
    assert edges == fix(want_edges)


def test_the_mlp_picture_has_torchvizs_labels():
    var, params = mlp(tg)
    nodes, edges, _ = rendered(viz.make_dot(var, params=params))
    assert nodes == collections.Counter({
        "W1\n(3, 4)": 1, "b1\n(4)": 1, "W2\n(4, 2)": 1, "()": 1, "AccumulateGrad": 3,
        "MmBackward0": 2, "AddBackward0": 1, "ReluBackward0": 1, "SoftmaxBackward0": 1,
        "SelectBackward0": 1, "SubBackward0": 1, "PowBackward0": 1, "MeanBackward0": 1})
    assert edges[("W1\n(3, 4)", "AccumulateGrad")] == 1
    assert edges[("AccumulateGrad", "MmBackward0")] == 2          # W1 into one, W2 the other
    assert edges[("MeanBackward0", "()")] == 1


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__)
def test_node_names_match_torchs_grad_fn_graph(prog):
    torch = pytest.importorskip("torch")
    var, params = prog(tg)
    tvar, tparams = prog(torch)
    nodes, edges, _ = rendered(viz.make_dot(var, params=params))
    want_nodes, want_edges = expected(tvar, tparams)
    assert nodes == fix(want_nodes)
    assert edges == fix(want_edges)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")      # torchviz's LooseVersion
@pytest.mark.parametrize("show_saved", [False, True])
@pytest.mark.parametrize("prog", [mlp, custom, view_out, two_outputs, shared_saved],
                         ids=lambda p: p.__name__)
def test_same_svg_as_torchviz(prog, show_saved):
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    var, params = prog(tg)
    tvar, tparams = prog(torch)
    ours = rendered(viz.make_dot(var, params=params, show_saved=show_saved))
    theirs = rendered(torchviz.make_dot(tvar, params=tparams, show_saved=show_saved))
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]


def test_double_backward_graph_without_torch():
    var, params = double(tg)
    nodes, edges, _ = rendered(viz.make_dot(var, params=params))
    # d/dx sum(sin x e^x) = cos x e^x + sin x e^x, recorded: the sin, exp and cos nodes of
    # the forward and backward, the products and their sum, all leading to the leaf x
    assert nodes == collections.Counter({
        "x\n(3)": 1, "AccumulateGrad": 1, "SinBackward0": 1, "ExpBackward0": 1,
        "CosBackward0": 1, "MulBackward0": 4, "AddBackward0": 1, "(3)": 1})
    assert edges[("AccumulateGrad", "SinBackward0")] == 1
    assert edges[("AccumulateGrad", "CosBackward0")] == 1
    assert edges[("AddBackward0", "(3)")] == 1


def test_custom_function_saved_tensors_are_drawn():
    var, params = custom(tg)
    nodes, edges, _ = rendered(viz.make_dot(var, params=params))
    assert nodes["ScaledTanhBackward"] == 1
    # the Function saved its output (no name, orange), joined to its node
    assert edges[("(3)", "ScaledTanhBackward")] == 1
    svg = viz.make_dot(var, params=params).source
    assert re.search(r'label="\n \(3\)" fillcolor=orange', svg)


def test_show_saved_and_attrs_read_the_tape():
    g = np.random.default_rng(3)
    A = tg.tensor(g.standard_normal((2, 6)), requires_grad=True)
    B = tg.tensor(g.standard_normal((6, 3)), requires_grad=True)
    inp = tg.tensor(g.standard_normal((7, 2)))
    hidden = (inp @ A).sigmoid()
    loss = (hidden @ B).pow(3).sum()
    dot = viz.make_dot(loss, params=dict(A=A, B=B), show_saved=True, show_attrs=True)
    nodes, edges, _ = rendered(dot)
    # inp @ A saves inp (A's gradient needs it), sigmoid its result, the second product both
    # operands (mat2 is the leaf B: one node, drawn last as the parameter), pow its input
    assert edges[("MmBackward0\n--------------------\nself: [saved tensor]", "self\n(7, 2)")] == 1
    assert nodes["result\n(7, 6)"] == 1
    assert nodes["B\n(6, 3)"] == 1 and nodes["mat2\n(6, 3)"] == 0
    assert any(k.startswith("MmBackward0") and "mat2: [saved tensor]" in k for k in nodes)
    pw = [k for k in nodes if k.startswith("PowBackward0")]
    assert len(pw) == 1 and "exponent:" in pw[0] and pw[0].rstrip().endswith("3")
    # after a backward the saved values are freed: drawn as such, not read
    loss.backward()
    nodes, _, _ = rendered(viz.make_dot(loss, params=dict(A=A, B=B), show_saved=True))
    assert nodes["result\n(freed)"] == 1 and nodes["self\n(freed)"] == 3
    assert nodes["mat2\n(freed)"] == 1 and nodes["B\n(6, 3)"] == 1


def test_a_value_saved_by_two_nodes_is_one_node():
    var, params = shared_saved(tg)
    dot = viz.make_dot(var, params=params, show_saved=True)
    _, _, labels = rendered(dot)
    title = {v: k for k, v in labels.items() if v.startswith(("Sin", "Cos"))}
    undirected = re.findall(r"\t(\w+) -> (\w+) \[dir=none\]", dot.source)
    # h = x * w, saved by sin and by cos as self: one node joined to both
    (hs,) = [d for s, d in undirected if s == title["SinBackward0"]]
    (hc,) = [d for s, d in undirected if s == title["CosBackward0"]]
    assert hs == hc and labels[hs] == "self\n(3)"
    # x * x saves x twice (self and other) and x * w saves x and w: the leaves themselves,
    # so x is one node with three undirected edges (named by the last save, as in torchviz)
    x_title = [d for s, d in undirected if labels[d] == "w\n(3)"]
    assert len(x_title) == 1
    into_x = [d for s, d in undirected if labels[s] == "MulBackward0" and d != x_title[0]
              and labels[d] != "other\n()"]
    assert len(into_x) == 3 and len(set(into_x)) == 1 and into_x[0] != hs


def test_collapses_repeated_chains():
    x = tg.ones(10, requires_grad=True)
    y = x
    for _ in range(1000):
        y = y * 1.0001 + 0.001
    nodes, edges, _ = rendered(viz.make_dot(y.sum(), params=dict(x=x)))
    assert nodes["(MulBackward0 -> AddBackward0) x 1000"] == 1
    assert sum(nodes.values()) == 5          # x, AccumulateGrad, the chain, the sum, the output
    assert edges[("AccumulateGrad", "(MulBackward0 -> AddBackward0) x 1000")] == 1
    # collapse=0 draws a chain node by node
    y = x
    for _ in range(30):
        y = y * 1.0001 + 0.001
    nodes, _, _ = rendered(viz.make_dot(y.sum(), params=dict(x=x), collapse=0))
    assert nodes["MulBackward0"] == 30 and nodes["AddBackward0"] == 30


def test_chain_with_a_shared_input_collapses_and_keeps_the_input():
    x = tg.ones(3, requires_grad=True)
    w = tg.full((3,), 0.5, requires_grad=True)
    y = x
    for _ in range(6):
        y = (y * w).tanh()
    nodes, edges, _ = rendered(viz.make_dot(y.sum(), params=dict(x=x, w=w)))
    assert nodes["(MulBackward0 -> TanhBackward0) x 6"] == 1
    assert nodes["w\n(3)"] == 1 and nodes["x\n(3)"] == 1
    assert edges[("AccumulateGrad", "(MulBackward0 -> TanhBackward0) x 6")] == 2   # x and w
    # fewer repeats than `collapse`: drawn as is
    nodes, _, _ = rendered(viz.make_dot(y.sum(), params=dict(x=x, w=w), collapse=7))
    assert nodes["MulBackward0"] == 6


def test_node_limit_says_what_was_left_out():
    x = tg.ones(4, requires_grad=True)
    out = tg.stack([(x * float(i)).sin() for i in range(40)]).sum()
    total = sum(expected(out, dict(x=x))[0].values())        # 40 sin + 40 mul + 5 = 85
    assert total == 85
    nodes, edges, _ = rendered(viz.make_dot(out, params=dict(x=x), max_nodes=16))
    note = [k for k in nodes if k.startswith("...")]
    assert note == ["... %d more nodes not drawn (max_nodes=16)\nthey feed 14 drawn nodes; "
                    "8 edges shown" % (total - 16)]
    assert sum(nodes.values()) == 17
    assert nodes["()"] == 1 and nodes["SumBackward0"] == 1 and nodes["StackBackward0"] == 1
    assert sum(v for (s, _), v in edges.items() if s == note[0]) == 8


def test_params_must_be_tensors_and_digraph_renders_in_jupyter():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="params must map names to tensors"):
        viz.make_dot(x.sum(), params={"x": 1.0})
    dot = viz.make_dot((x * 2).sum(), params={"x": x})
    assert isinstance(dot, graphviz.Digraph)
    bundle = dot._repr_mimebundle_()
    assert "image/svg+xml" in bundle and "MulBackward0" in bundle["image/svg+xml"]


def test_importing_tapegrad_and_viz_does_not_import_graphviz(tmp_path):
    code = ("import sys, tapegrad, tapegrad.viz; "
            "assert 'graphviz' not in sys.modules, 'graphviz imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
    # without the package, drawing says what to install
    (tmp_path / "graphviz").mkdir()
    (tmp_path / "graphviz" / "__init__.py").write_text("raise ImportError('no graphviz')\n")
    code = ("import tapegrad, tapegrad.viz\n"
            "x = tapegrad.ones(2, requires_grad=True)\n"
            "try:\n    tapegrad.viz.make_dot((x * 2).sum())\n"
            "except ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert 'pip install "tapegrad[viz]"' in out and "apt-get install graphviz" in out


# ----------------------------------------------------------------------------- tapes
LISTING = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+=\s+(\S+?)\s*\((.*?)\)\s+#\s+(\S+)(.*)$")


def listing_entries(tape):
    """{entry: (out node, dtype[size], opcode, operands, grad_fn name)} parsed from the
    tape's own listing."""
    out = {}
    for line in str(tape).splitlines()[1:]:
        m = LISTING.match(line)
        assert m, line
        e, node, size, op, args, gname, _ = m.groups()
        out[int(e)] = (node, size, op, args, gname)
    return out


def branchy(w, x):
    h = (x @ w).tanh()
    if h.sum() > 0:
        h = h * 2
    return (h ** 2).mean()


def test_draw_tape_shows_each_entry_as_the_listing_does():
    w, x = tg.randn(3, 2), tg.randn(4, 3)
    tape = tf.make_tape(branchy, w, x)
    nodes, edges, labels = rendered(viz.draw_tape(tape))
    entries = listing_entries(tape)
    assert len(entries) == len(tape) >= 5
    for e, (node, size, op, args, gname) in entries.items():
        assert labels["e%d" % e] == "#%d %s(%s)\n%s = %s\n%s" % (e, op, args, node, size, gname)
    # inputs (named after the parameters when f is given) and output, with shapes
    nodes_f, _, labels_f = rendered(viz.draw_tape(branchy, w, x))
    assert labels_f["i0"] == "in0 w\nfloat32 (3, 2)" and labels_f["i1"] == "in1 x\nfloat32 (4, 3)"
    assert labels["o0"] == "out0\nfloat32 ()"
    # edges follow the operands: the product reads both inputs, the output is the last entry's
    by_title = {v: k for k, v in labels.items()}
    first = labels["e0"]
    assert edges[(labels["i1"], first)] == 1 and edges[(labels["i0"], first)] == 1
    assert edges[(labels["e%d" % (len(tape) - 1)], "out0\nfloat32 ()")] == 1
    # the comparison made while recording is a guard, joined to the sum it read
    assert len(tape.guards) == 1
    guard = [k for k in nodes if k.startswith("guard")]
    want = "True" if float((x @ w).tanh().sum()) > 0 else "False"
    assert guard == ["guard greater(n4, 0)\n== %s" % want]
    (src, _), = [p for p in edges if p[1] == guard[0]]
    assert by_title[src].startswith("e") and " sum(" in src
    # the picture's title line
    assert "CompiledTape: %d entries" % len(tape) in viz.draw_tape(tape).source


def test_draw_tape_marks_captured_tensors_and_numpy_entries():
    W = tg.randn(3, 3, requires_grad=True)
    c = tg.randn(3)

    def f(x):
        return ((x @ W).tanh() * c).sum()
    tape = tf.make_tape(f, tg.randn(40000, 3))          # big nodes: entries run on numpy
    nodes, edges, labels = rendered(viz.draw_tape(tape))
    for e, (node, size, op, args, gname) in listing_entries(tape).items():
        flag = "\n(numpy)" if "(numpy)" in str(tape).splitlines()[e + 1] else ""
        assert labels["e%d" % e] == "#%d %s(%s)\n%s = %s\n%s%s" % (e, op, args, node, size,
                                                                  gname, flag)
    assert labels["e0"].endswith("(numpy)")
    # W is captured (not an argument): an orange input of the product, with its shape
    (cap,) = [k for k in nodes if "(captured)" in k]
    assert cap.endswith("float32 (3, 3)")
    assert edges[(cap, labels["e0"])] == 1


def test_draw_tape_collapses_and_limits():
    def chain(x):
        for _ in range(1000):
            x = x * 1.0001 + 0.001
        return x.sum()
    nodes, _, _ = rendered(viz.draw_tape(chain, tg.ones(10)))
    assert nodes["(mul(x, const) -> add(x, const)) x 1000\n#0 .. #1999"] == 1
    assert sum(nodes.values()) == 4          # input, the chain, the sum, the output
    nodes, _, _ = rendered(viz.draw_tape(chain, tg.ones(10), collapse=0, max_nodes=50))
    assert nodes["... 1953 more nodes not drawn (max_nodes=50)"] == 1   # 2,003 nodes
    with pytest.raises(TypeError, match="expected a function"):
        viz.draw_tape(42)
    with pytest.raises(TypeError, match="takes no example arguments"):
        viz.draw_tape(tf.make_tape(chain, tg.ones(10)), tg.ones(10))
