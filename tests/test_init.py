"""tapegrad/__init__.py: the torch namespace, built last from each family's ``__all__``.

* Every public name of the namespaces users reach (``tapegrad``, ``tapegrad.Tensor``,
  ``nn.functional``, ``linalg``, ``special``, ``autograd``, ``func``) that the checked-in list
  ``namespace_names.txt`` records is still there, and still the same kind of object (module,
  class, callable, property, a value of the same type). The list was taken before the
  namespace was rebuilt from the families' ``__all__`` (issue 27); names may be added, none
  may disappear. ``python tests/test_init.py`` rewrites it (after adding names on purpose).
* No name of ``tapegrad/__init__.py`` is bound twice: the statements of the file are read
  with ``ast`` (a star import binds its module's ``__all__``; the dictionary of functions
  built from the attached methods, ``_methods.namespace_functions()``, binds its keys), so a
  later import can no longer silently replace an earlier one (``matmul``, ``relu`` and ``xlogy`` used to be bound two or three times).
"""
import ast
import importlib
import inspect
import os
import sys
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAMES = os.path.join(HERE, "namespace_names.txt")
INIT = os.path.join(ROOT, "tapegrad", "__init__.py")

# the namespaces users reach: (label, module name, attribute of it or None)
SPACES = (("tapegrad", "tapegrad", None), ("tapegrad.Tensor", "tapegrad", "Tensor"),
          ("tapegrad.nn.functional", "tapegrad.nn.functional", None),
          ("tapegrad.linalg", "tapegrad.linalg", None),
          ("tapegrad.special", "tapegrad.special", None),
          ("tapegrad.autograd", "tapegrad.autograd", None),
          ("tapegrad.func", "tapegrad.func", None))


def _kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "property"
    if callable(obj):
        return "callable"
    return "value:" + type(obj).__name__


def _public(name, cls):
    return not name.startswith("_") or (cls and name.startswith("__") and name.endswith("__"))


def snapshot():
    """{(namespace, name): kind} of the live package."""
    out = {}
    for label, modname, attr in SPACES:
        ns = importlib.import_module(modname)
        if attr:
            ns = getattr(ns, attr)
        for name in dir(ns):
            obj = getattr(ns, name)
            if _public(name, attr is not None) and not (
                    isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] != "tapegrad"):
                out[label, name] = _kind(obj)      # (numpy, math ...: not the package's names)
    return out


def _recorded():
    with open(NAMES, encoding="utf-8") as fh:
        rows = [ln.split() for ln in fh if ln.strip() and not ln.startswith("#")]
    return {(ns, name): kind for ns, name, kind in rows}


def test_recorded_names_are_all_there():
    live = snapshot()
    recorded = _recorded()
    assert len(recorded) > 1300              # (the list is the whole surface, not a sample)
    missing = sorted("%s.%s" % k for k in recorded if k not in live)
    assert missing == []
    changed = sorted("%s.%s: %s, was %s" % (k + (live[k], recorded[k])) for k in recorded
                     if k in live and live[k] != recorded[k])
    assert changed == []


# ----------------------------------------------------------------------------- bound once
def _module_all(modname):
    """The ``__all__`` a star import of ``modname`` binds (read from the source when it is a
    literal, else from the module)."""
    mod = importlib.import_module(modname)
    return list(mod.__all__)


def _resolve(level, module):
    base = ["tapegrad"][:1] if level == 1 else []
    return ".".join(base + ([module] if module else []))


def bindings(path=INIT):
    """[(name, line)] for every name the top-level statements of ``__init__.py`` bind."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = []

    def targets(t, line):
        if isinstance(t, ast.Name):
            out.append((t.id, line))
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e, line)

    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            src = _resolve(node.level, node.module) if node.level else node.module
            for a in node.names:
                if a.name == "*":
                    out.extend((n, node.lineno) for n in _module_all(src))
                else:
                    out.append((a.asname or a.name, node.lineno))
        elif isinstance(node, ast.Import):
            out.extend(((a.asname or a.name.split(".")[0]), node.lineno) for a in node.names)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                targets(t, node.lineno)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets(node.target, node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append((node.name, node.lineno))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            call = ast.unparse(node.value)
            if call.startswith("globals().update("):
                arg = ast.unparse(node.value.args[0])
                import tapegrad
                keys = eval(arg, vars(tapegrad))      # the dictionary the statement merges
                out.extend((n, node.lineno) for n in keys)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.attr in ("setdefault", "update", "__setitem__"):
                out.append(("<%s>" % call, node.lineno))
        elif isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            out.append(("<compound statement at line %d>" % node.lineno, node.lineno))
    return out


def test_no_name_is_bound_twice():
    seen, twice = {}, []
    for name, line in bindings():
        if name in seen:
            twice.append("%s (lines %d and %d)" % (name, seen[name], line))
        seen.setdefault(name, line)
    assert twice == []
    assert not [n for n, _ in bindings() if n.startswith("<")]   # no loops, no setattr


def test_bindings_walk_sees_star_imports(tmp_path):
    """The check above is only as good as its walk: a star import binds the ``__all__`` of
    its module, a re-import is seen."""
    p = tmp_path / "init.py"
    p.write_text("from tapegrad._math import *\nfrom tapegrad._math import exp\nabs = 1\n")
    names = [n for n, _ in bindings(str(p))]
    assert names.count("exp") == 2 and names.count("abs") == 2


def test_family_all_lists_exist():
    """Each name a family's ``__all__`` lists is defined in that module."""
    import tapegrad
    for mod in (m for n, m in sorted(sys.modules.items()) if n.startswith("tapegrad.")
                and isinstance(m, types.ModuleType) and hasattr(m, "__all__")):
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert missing == [], mod.__name__
    assert tapegrad.absolute is tapegrad.abs


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    rows = sorted(snapshot().items())
    with open(NAMES, "w", encoding="utf-8") as fh:
        fh.write("# tests/test_init.py: the public names of the namespaces users reach, and "
                 "their kind\n")
        for (ns, name), kind in rows:
            fh.write("%s %s %s\n" % (ns, name, kind))
    print("%d names written to %s" % (len(rows), NAMES))
