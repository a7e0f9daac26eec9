"""The package's layering rule (docs/design.md, "Layers"), checked on the source.

Every module of ``tapegrad`` has a rank (``RANKS``: its layer, then its place in the layer). A
module imports package modules only of lower rank: at top level always, and inside a function
only when the import is marked ``# deferred: <reason>`` (a heavy module loaded on first use).
So there is no upward import and no import circle, top-level or function-level. The walk is an
``ast`` one over the files (nothing is imported), so it sees every import, whichever branch or
function it sits in.
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tapegrad")

# (layer, modules in their order within the layer). A module may import any module listed
# before it, never one listed after it or itself.
LAYERS = [
    (0, ["tapegrad._schema", "tapegrad._state", "tapegrad._alloc", "tapegrad._par",
         "tapegrad._sel"]),
    (1, ["tapegrad._compiled", "tapegrad._compiled._fastload", "tapegrad._compiled._addr",
         "tapegrad._compiled._vmath", "tapegrad._compiled._native", "tapegrad._compiled.kernels",
         "tapegrad._compiled._interp", "tapegrad._compiled._driver", "tapegrad._compiled._blas",
         "tapegrad._compiled._runs", "tapegrad._compiled._sums", "tapegrad._compiled._layout",
         "tapegrad._compiled._scatter"]),
    (2, ["tapegrad.ops"]),
    (3, ["tapegrad._core", "tapegrad._core.names", "tapegrad._core.tape"]),
    (4, ["tapegrad.tensor"]),
    (5, ["tapegrad._record", "tapegrad.autograd.function"]),
    (6, ["tapegrad._info", "tapegrad._index", "tapegrad._shape", "tapegrad._math",
         "tapegrad.creation", "tapegrad._reduce", "tapegrad._matrix", "tapegrad.linalg",
         "tapegrad.special", "tapegrad.nn._conv", "tapegrad.nn.functional",
         "tapegrad.nn._losses2", "tapegrad._extra", "tapegrad.nn.init", "tapegrad.nn.parameter",
         "tapegrad.nn.utils"]),
    (7, ["tapegrad.autograd.anomaly", "tapegrad.autograd.grad_mode", "tapegrad.autograd.graph",
         "tapegrad.autograd.hooks", "tapegrad.autograd.higher", "tapegrad.autograd.engine",
         "tapegrad.autograd.functional", "tapegrad.autograd.forward_ad",
         "tapegrad.autograd.variable", "tapegrad.testing._gradcheck", "tapegrad.autograd",
         "tapegrad.func"]),
    (8, ["tapegrad._format", "tapegrad._methods", "tapegrad.testing", "tapegrad.testing.programs",
         "tapegrad.testing.strategies", "tapegrad.testing.pytest_plugin", "tapegrad.viz"]),
    (9, ["tapegrad.nn", "tapegrad.backends", "tapegrad.cuda", "tapegrad", "tapegrad.__main__"]),
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
    return found


def test_every_module_has_a_rank():
    assert sorted(set(MODULES) - set(RANKS)) == []
    assert sorted(set(RANKS) - set(MODULES)) == []


def test_imports_reach_existing_modules():
    """An import of a package module that does not exist would be served by whatever else is
    on the path (an installed copy): every one must name a module of this tree."""
    bad = [(m, t, ln) for m, t, ln, _, _ in imports() if t not in MODULES]
    assert bad == []


def test_no_upward_import_and_no_circle():
    bad = ["%s:%d imports %s" % (m, ln, t) for m, t, ln, _, _ in imports()
           if t in RANKS and m in RANKS and RANKS[t] >= RANKS[m]]
    assert bad == []


def test_function_level_imports_are_declared():
    bad = ["%s:%d imports %s inside a function without '# deferred: <reason>'" % (m, ln, t)
           for m, t, ln, infunc, deferred in imports() if infunc and not deferred]
    assert bad == []


def test_the_walk_sees_imports():
    """The checks above are only as good as the walk: it must find known imports."""
    found = {(m, t) for m, t, _, _, _ in imports()}
    assert ("tapegrad._core.tape", "tapegrad._schema") in found
    assert ("tapegrad._core.tape", "tapegrad._compiled._interp") in found   # in a function
    assert ("tapegrad._compiled.kernels", "tapegrad._compiled._native") in found
