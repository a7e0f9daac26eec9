"""The package's layering rule (docs/design.md, "Layers"), checked on the source.

Every module of ``tapegrad`` has a rank (``RANKS``: its layer, then its place in the layer). A
module imports package modules only of lower rank: at top level always, and inside a function
only when the import is marked ``# deferred: <reason>`` (a heavy module loaded on first use).
So there is no upward import and no import circle, top-level or function-level. The walk is an
``ast`` one over the files (nothing is imported), so it sees every import, whichever branch or
function it sits in.
"""
import ast
import functools
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tapegrad")

# (layer, modules in their order within the layer). A module may import any module listed
# before it, never one listed after it or itself.
LAYERS = [
    (0, ["tapegrad._schema", "tapegrad._state", "tapegrad._alloc", "tapegrad._par",
         "tapegrad._sel", "tapegrad._randk"]),
    (1, ["tapegrad._compiled._cache", "tapegrad._compiled", "tapegrad._compiled._fastload", "tapegrad._compiled._addr",
         "tapegrad._compiled._vmath", "tapegrad._compiled._native", "tapegrad._compiled.kernels",
         "tapegrad._compiled._interp", "tapegrad._compiled._driver", "tapegrad._compiled._blas",
         "tapegrad._compiled._runs", "tapegrad._compiled._sums", "tapegrad._compiled._layout",
         "tapegrad._compiled._scatter"]),
    (2, ["tapegrad.ops"]),
    (3, ["tapegrad._core", "tapegrad._core.names", "tapegrad._core.pysweep",
         "tapegrad._core.tape"]),
    (4, ["tapegrad.tensor"]),
    (5, ["tapegrad._record", "tapegrad.autograd.function"]),
    (6, ["tapegrad._info", "tapegrad._shape", "tapegrad._index", "tapegrad._math",
         "tapegrad.creation", "tapegrad._reduce", "tapegrad._matrix", "tapegrad.linalg",
         "tapegrad.nn._fused", "tapegrad.nn._conv", "tapegrad.nn.functional",
         "tapegrad.special", "tapegrad.nn.init", "tapegrad.nn.parameter",
         "tapegrad.nn.utils"]),
    (7, ["tapegrad.autograd.anomaly", "tapegrad.autograd.grad_mode", "tapegrad.autograd.graph",
         "tapegrad.autograd.hooks", "tapegrad.autograd.higher", "tapegrad.autograd.engine",
         "tapegrad.autograd.functional", "tapegrad.autograd.forward_ad",
         "tapegrad.autograd.variable", "tapegrad.autograd._gradcheck", "tapegrad.autograd",
         "tapegrad._dask", "tapegrad._progress", "tapegrad.func"]),
    (8, ["tapegrad._format", "tapegrad._methods", "tapegrad.testing"]),
    (9, ["tapegrad.nn", "tapegrad.backends", "tapegrad.cuda", "tapegrad.random", "tapegrad",
         "tapegrad.__main__"]),
    # clients of the torch namespace: they run programs written against ``import tapegrad as
    # torch`` (the package never imports them; autograd's gradcheck lives in autograd)
    (10, ["tapegrad.testing.programs", "tapegrad.testing.strategies",
          "tapegrad.testing.pytest_plugin", "tapegrad.testing._api_hints",
          "tapegrad.testing._api_specs", "tapegrad.testing._diffgen",
          "tapegrad.testing._diffrun", "tapegrad.testing.differential",
          "tapegrad.testing._gen_api_specs", "tapegrad.viz", "tapegrad.precompile"]),
    # the training stack (nn.Module and layers, optim, utils.data, save/load): written against
    # the torch namespace (``import tapegrad as _tg``), loaded on first use by tapegrad/nn's
    # and the package's __getattr__
    (11, ["tapegrad.nn.modules._buffer", "tapegrad.nn.modules._backward_hook", "tapegrad.nn.modules._functional",
          "tapegrad.nn.modules.utils", "tapegrad.utils.hooks", "tapegrad.nn.modules.rnn_utils",
          "tapegrad.optim._fused", "tapegrad.optim._kernels", "tapegrad.serialization",
          "tapegrad.utils.data.dataset", "tapegrad.utils.data.sampler", "tapegrad.utils.data._utils.collate",
          "tapegrad.nn.modules.module", "tapegrad.optim.optimizer", "tapegrad.utils.data._utils",
          "tapegrad.nn.modules.batchnorm", "tapegrad.nn.modules.container", "tapegrad.nn.modules.conv",
          "tapegrad.nn.modules.distance", "tapegrad.nn.modules.dropout", "tapegrad.nn.modules.flatten",
          "tapegrad.nn.modules.fold", "tapegrad.nn.modules.linear", "tapegrad.nn.modules.normalization",
          "tapegrad.nn.modules.padding", "tapegrad.nn.modules.pixelshuffle", "tapegrad.nn.modules.pooling",
          "tapegrad.nn.modules.rnn", "tapegrad.nn.modules.sparse", "tapegrad.nn.modules.upsampling",
          "tapegrad.optim._reference", "tapegrad.optim.lbfgs", "tapegrad.optim.lr_scheduler",
          "tapegrad.utils.data.dataloader", "tapegrad.nn.modules.instancenorm", "tapegrad.nn.modules.loss",
          "tapegrad.nn.modules.activation", "tapegrad.optim.adam", "tapegrad.optim.sgd",
          "tapegrad.utils.data", "tapegrad.nn.modules.transformer", "tapegrad.optim.adadelta",
          "tapegrad.optim.adagrad", "tapegrad.optim.adamax", "tapegrad.optim.adamw",
          "tapegrad.optim.asgd", "tapegrad.optim.nadam", "tapegrad.optim.radam",
          "tapegrad.optim.rmsprop", "tapegrad.optim.rprop", "tapegrad.utils",
          "tapegrad.nn.modules", "tapegrad.optim"]),
]

def _ranks():
    ranks = {}
    for layer, mods in LAYERS:
        for i, m in enumerate(mods):
            ranks[m] = (layer, i)
    return ranks


RANKS = _ranks()


def _modules():
    mods = {}
    for dp, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dp, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                mods[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return mods


MODULES = _modules()


def _target(mod, is_pkg, node):
    """Absolute module names an import statement reaches (package modules only)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "tapegrad"]
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        pkg = ".".join(base + ([node.module] if node.module else []))
    else:
        pkg = node.module or ""
        if pkg.split(".")[0] != "tapegrad":
            return []
    out = []
    for a in node.names:
        sub = pkg + "." + a.name
        out.append(sub if sub in MODULES else pkg)
    return out


@functools.lru_cache(maxsize=None)
def imports():
    """(importer, imported, line, in a function, deferred comment) for every package import."""
    found = []
    for mod, path in sorted(MODULES.items()):
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        lines = src.splitlines()
        tree = ast.parse(src)
        is_pkg = path.endswith("__init__.py")

        def walk(node, infunc):
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.Import, ast.ImportFrom)):
                    text = " ".join(lines[ch.lineno - 1:ch.end_lineno])
                    for t in _target(mod, is_pkg, ch):
                        found.append((mod, t, ch.lineno, infunc, "# deferred:" in text))
                elif isinstance(ch, ast.Call):
                    f = ch.func
                    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                    if name in ("__import__", "import_module") and ch.args and isinstance(
                            ch.args[0], ast.Constant) and str(ch.args[0].value).startswith("tapegrad"):
                        found.append((mod, ch.args[0].value, ch.lineno, True, False))
                walk(ch, infunc or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda)))
        walk(tree, False)
    return tuple(found)


# Upward imports still in the tree, each a function-level import dodging a circle between two
# op families (or a grab-bag module still to be dissolved). The list only shrinks: a pair that
# no longer occurs fails ``test_known_exceptions_are_current``.
# The long tail moved from the old _extra.py into its families unchanged: those bodies still call
# the namespace (``T = _torch()``; ``T.cat(...)``) instead of importing what they use.
_MOVED = "bodies moved unchanged from the dissolved _extra.py call the namespace (T = _torch())"

KNOWN_UPWARD = {
    ("tapegrad._math", "tapegrad._matrix"):
        "addmv/addr/baddbmm/addbmm/inner/vdot/chain_matmul are matrix functions kept in _math",
    ("tapegrad._math", "tapegrad.special"):
        "rsqrt/square-style pointwise Functions and the lgamma/digamma/... method adapters",
    ("tapegrad._reduce", "tapegrad.linalg"): "torch.norm's string orders go to linalg.matrix_norm",
    ("tapegrad._shape", "tapegrad._index"): "index_put (an index-family op kept in _shape)",
    ("tapegrad._shape", "tapegrad._math"): "masked_fill is built on where",
    ("tapegrad._shape", "tapegrad.creation"): "new_zeros/new_full/new_tensor method adapters",
    ("tapegrad.nn.functional", "tapegrad.special"): "a loss uses special.xlogy",
    ("tapegrad.nn.functional", "tapegrad.nn.modules._functional"):
        "alpha_dropout, embedding(max_norm=, scale_grad_by_freq=) are written with the training"
        " stack's functional helpers (to be moved into nn.functional)",
    ("tapegrad.nn._conv", "tapegrad.autograd.graph"): "index_reduce renames its node view's class",
    ("tapegrad._shape", "tapegrad"): _MOVED,
    ("tapegrad._index", "tapegrad"): _MOVED,
    ("tapegrad._math", "tapegrad"): _MOVED,
    ("tapegrad.creation", "tapegrad"): _MOVED,
    ("tapegrad._reduce", "tapegrad"): _MOVED,
    ("tapegrad._matrix", "tapegrad"): _MOVED,
    ("tapegrad.nn._conv", "tapegrad"): _MOVED,
    ("tapegrad.special", "tapegrad"): _MOVED,
    ("tapegrad.autograd._gradcheck", "tapegrad"):
        "gradcheck serves any torch-like library and defaults to this package",
}

# Modules whose function-level imports need no '# deferred:' mark, with the reason.
UNDECLARED_OK = {
    # public namespaces (torch.linalg, torch.special, torch.nn.functional): a module-level
    # import of a helper would show up in their dir()
    "tapegrad.linalg": "public namespace",
    "tapegrad.special": "public namespace",
    "tapegrad.nn.functional": "public namespace",
    # the replay compiler: its function-level imports are still to be hoisted or marked
    "tapegrad.func": "imports to be hoisted or marked deferred",
}


def _upward(found):
    return [(m, t, ln) for m, t, ln, _, _ in found
            if t in RANKS and m in RANKS and RANKS[t] >= RANKS[m]]


def test_every_module_has_a_rank():
    assert sorted(set(MODULES) - set(RANKS)) == []
    assert sorted(set(RANKS) - set(MODULES)) == []


def test_imports_reach_existing_modules():
    """An import of a package module that does not exist would be served by whatever else is
    on the path (an installed copy): every one must name a module of this tree."""
    bad = [(m, t, ln) for m, t, ln, _, _ in imports() if t not in MODULES]
    assert bad == []


def test_no_upward_import():
    bad = ["%s:%d imports %s" % (m, ln, t) for m, t, ln in _upward(imports())
           if (m, t) not in KNOWN_UPWARD]
    assert bad == []


def test_known_exceptions_are_current():
    found = imports()
    assert sorted(set(KNOWN_UPWARD) - {(m, t) for m, t, _ in _upward(found)}) == []
    undeclared = {m for m, _, _, infunc, deferred in found if infunc and not deferred}
    assert sorted(set(UNDECLARED_OK) - undeclared) == []


def test_no_import_circle():
    """Top-level imports form no circle at all; with function-level ones, every circle goes
    through one of the known upward pairs."""
    found = imports()
    for edges in ({(m, t) for m, t, _, infunc, _ in found if not infunc},
                  {(m, t) for m, t, _, _, _ in found} - set(KNOWN_UPWARD)):
        assert _circles(edges) == []


def _circles(edges):
    """Strongly connected components of more than one module (Tarjan), and self-imports."""
    graph = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out + sorted([a] for a, b in edges if a == b)


def test_function_level_imports_are_declared():
    bad = ["%s:%d imports %s inside a function without '# deferred: <reason>'" % (m, ln, t)
           for m, t, ln, infunc, deferred in imports()
           if infunc and not deferred and m not in UNDECLARED_OK
           and (m, t) not in KNOWN_UPWARD]
    assert bad == []


def test_the_walk_sees_imports():
    """The checks above are only as good as the walk: it must find known imports."""
    found = {(m, t) for m, t, _, _, _ in imports()}
    assert ("tapegrad._core.tape", "tapegrad._schema") in found
    assert ("tapegrad._core.pysweep", "tapegrad._compiled._interp") in found   # in a function
    assert ("tapegrad._compiled.kernels", "tapegrad._compiled._native") in found
    assert _circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
