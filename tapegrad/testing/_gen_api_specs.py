"""Generate ``tapegrad/testing/_api_specs.py`` from PyTorch's own signatures (needs torch).

    python -m tapegrad.testing._gen_api_specs            # rewrite the table
    python -m tapegrad.testing._gen_api_specs --check    # exit 1 when the table is stale

For every public callable of tapegrad (``tapegrad.*``, ``tapegrad.nn.functional.*``,
``tapegrad.linalg.*``, ``tapegrad.special.*``, the methods and properties of
``tapegrad.Tensor``) that torch also has, the table lists torch's overloads as data:

* ATen operators (``torch._C._jit_get_schemas_for_operator("aten::<name>")``; ``linalg_`` and
  ``special_`` prefixes for those namespaces): each overload's parameters with their kinds,
  defaults and keyword-only flags, its return kinds and alias annotations (``Tensor(a)``: the
  result is a view of an input; ``Tensor(a!)``: written in place). ``out=`` overloads,
  TorchScript's scalar/list overloads and overloads taking ``Dimname``s are left out.
* Python-level functions (``torch.functional.*``, most of ``torch.nn.functional``): their
  ``inspect.signature``, kinds read from annotations, defaults and the ATen schema of the same
  name.

Parameter kinds: ``T`` tensor, ``T?`` optional tensor, ``T[]`` list of tensors, ``T?[]`` list
of optional tensors (indices), ``T*`` varargs tensors, ``I`` int, ``I[]`` int list (``I[2]``
fixed length), ``F`` float, ``S`` number (Scalar), ``B`` bool, ``STR`` str, ``DT`` dtype,
``GEN`` generator, ``DEV`` device, ``ANY`` unknown; a trailing ``?`` marks ``None`` allowed.
The table is checked in so the differential suite runs without torch; argument *roles* (which
int is a dim, which tensor an index ...) are decided when drawing, from parameter names and
the hand-written hints in ``_api_hints.py``.
"""
import inspect
import os
import pprint
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_api_specs.py")

_SKIP_TYPES = ("Dimname", "complex", "List[t]", "t", "Any", "AnyEnumType", "Storage",
               "Stream", "ScalarType", "Layout", "MemoryFormat", "QScheme", "Future", "Dict",
               "List[str]", "__torch__", "Tuple")


def _kind(name, tstr):
    """Kind code of an ATen argument type, or None for a type the differential suite cannot
    draw (the overload is dropped)."""
    opt = tstr.startswith("Optional[")
    base = tstr[len("Optional["):-1] if opt else tstr
    q = "?" if opt else ""
    if name == "dtype" and base == "int":
        return "DT" + q
    if name in ("layout", "memory_format", "pin_memory") and base in ("int", "bool"):
        return "X"                                     # never drawn (left at its default)
    table = {"Tensor": "T", "List[Tensor]": "T[]", "List[Optional[Tensor]]": "T?[]",
             "int": "I", "SymInt": "I", "List[int]": "I[]", "List[SymInt]": "I[]",
             "number": "S", "float": "F", "List[float]": "F[]", "bool": "B",
             "List[bool]": "B[]", "str": "STR", "Generator": "GEN", "Device": "DEV"}
    k = table.get(base)
    if k is None:
        return None
    if k in ("GEN", "DEV"):
        return "X"
    return k + q


def _returns(schema):
    out = []
    for r in schema.returns:
        t = str(r.type)
        k = {"Tensor": "T", "List[Tensor]": "T[]", "int": "I", "float": "F", "bool": "B",
             "number": "S", "List[int]": "I[]"}.get(t, "ANY")
        out.append(k)
    return ",".join(out)


def _aten_overloads(aten_name, method):
    import torch
    res = []
    for s in torch._C._jit_get_schemas_for_operator(aten_name):
        ov = s.overload_name
        if "out" in ov.split("_") or ov.endswith("out") or any(a.is_out for a in s.arguments):
            continue
        args = list(s.arguments)
        if not args:
            continue
        if method:
            if args[0].name != "self" or str(args[0].type) != "Tensor":
                continue
            args = args[1:]
        params, ok = [], True
        for a in args:
            k = _kind(a.name, str(a.type))
            if k is None:
                ok = False
                break
            if k == "X" and not a.has_default_value():
                ok = False
                break
            if k == "X":
                continue
            if k.startswith("I[]") and a.N:
                k = "I[%d]" % a.N + ("?" if k.endswith("?") else "")
            p = (a.name, k, int(bool(a.kwarg_only)))
            if a.has_default_value():
                p += (_literal(a.default_value),)
            params.append(p)
        if not ok:
            continue
        if not method and not any(p[1].startswith("T") for p in params) and not \
                aten_name.split("::")[1] in _CREATION:
            continue
        flags = ""
        ret_alias = [r.alias_info for r in s.returns if r.alias_info is not None]
        if any(a.alias_info is not None and a.alias_info.is_write for a in s.arguments):
            flags += "i"
        elif ret_alias:
            flags += "v"
        if any(str(a.type) == "Optional[Generator]" for a in s.arguments):
            flags += "g"
        res.append((ov, tuple(params), _returns(s), flags))
    return res


_CREATION = {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand",
             "randn", "randint", "randperm", "scalar_tensor", "tensor", "tril_indices",
             "triu_indices", "hann_window", "hamming_window", "blackman_window",
             "bartlett_window", "kaiser_window", "range", "empty_strided", "normal",
             "from_file", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
             "randn_like", "randint_like"}


def _literal(v):
    """A Python literal for a default value (None when not representable)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return tuple(_literal(x) for x in v)
    return None


def _ann_kind(ann, default, name):
    """Kind of a Python parameter (``default`` is ``inspect.Parameter.empty`` when it has
    none)."""
    s = str(ann) if ann is not inspect.Parameter.empty else ""
    s = s.replace("torch.", "").replace("typing.", "").replace("<class '", "").replace("'>", "")
    opt = "None" in s or "Optional" in s or default is None
    q = "?" if opt else ""
    if "Tensor" in s and ("list" in s.lower() or "tuple" in s.lower()):
        return "T[]" + q
    if "Tensor" in s:
        return "T" + q
    if s.startswith("bool") or isinstance(default, bool):
        return "B" + q
    if "str" in s and "float" in s:
        return "S" + q                                   # norm's p: float | str
    if s.startswith("int") and ("list" in s or "tuple" in s or "Sequence" in s) or \
            s.startswith("list[int]") or s.startswith("tuple[int") or \
            s.startswith("Sequence[int]") or s.startswith("BroadcastingList"):
        return "I[]" + q
    if s.startswith("int") or (isinstance(default, int) and not isinstance(default, bool)):
        return "I" + q
    if s.startswith("float") or isinstance(default, float):
        return "F" + q
    if s.startswith("str") or isinstance(default, str):
        return "STR" + q
    if s.startswith("list[float]") or s.startswith("tuple[float"):
        return "F[]" + q
    return "ANY" + q


def _python_overload(fn, method, aten_params=None):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = []
    plist = list(sig.parameters.values())
    if method and plist and plist[0].name == "self":
        plist = plist[1:]
    by_name = {p[0]: p for p in (aten_params or ())}
    for i, p in enumerate(plist):
        if p.name.startswith("_") or p.name in ("out", "size_average", "reduce") and \
                p.default is not inspect.Parameter.empty:
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            params.append((p.name, "T*", 0))
            continue
        d = p.default
        k = _ann_kind(p.annotation, d, p.name)
        an = by_name.get(p.name) or (by_name.get("self") if i == 0 and not method else None)
        if k.startswith("ANY") and an is not None:
            k = an[1]
        if k.startswith("ANY") and i == 0 and not method and p.name in (
                "input", "tensor", "x", "x1", "a", "A", "self"):
            k = "T"
        if k.startswith("ANY") and p.name in ("x2", "b", "other", "weight", "target",
                                              "bias"):
            k = "T" + ("?" if d is None else "")
        entry = (p.name, k, int(p.kind is inspect.Parameter.KEYWORD_ONLY))
        if d is not inspect.Parameter.empty:
            entry += (_literal(d),)
        params.append(entry)
    return ("py", tuple(params), "ANY", "p")


def public_names():
    """{spec key: (tapegrad object, torch object or None, aten name, method?)} for every
    public callable or Tensor attribute of tapegrad."""
    import tapegrad as tg  # deferred: the namespace under test, loaded when a run starts
    import tapegrad.nn.functional as tgF  # deferred: the namespace under test, loaded when a run starts
    out = {}
    spaces = [("torch", tg, "", ""), ("F", tgF, "nn.functional.", ""),
              ("linalg", tg.linalg, "linalg.", "linalg_"),
              ("special", tg.special, "special.", "special_")]
    try:
        import torch
    except ImportError:
        torch = None
    for key, mod, tpath, aprefix in spaces:
        for n in sorted(dir(mod)):
            if n.startswith("_"):
                continue
            obj = getattr(mod, n)
            if inspect.ismodule(obj) or isinstance(obj, type) or not callable(obj):
                continue
            tobj = None
            if torch is not None:
                tmod = torch
                for part in tpath.split(".")[:-1]:
                    tmod = getattr(tmod, part)
                tobj = getattr(tmod, n, None)
            aten = n
            if tobj is not None and inspect.isbuiltin(tobj) and key == "F":
                aten = getattr(tobj, "__name__", n)
            out["%s.%s" % (key, n)] = (obj, tobj, "aten::" + aprefix + aten, False)
    for n in sorted(dir(tg.Tensor)):
        if n.startswith("_"):
            continue
        tobj = getattr(torch.Tensor, n, None) if torch is not None else None
        out["Tensor." + n] = (getattr(tg.Tensor, n, None), tobj, "aten::" + n, True)
    return out


def build():
    import torch
    specs, missing = {}, []
    for key, (obj, tobj, aten, method) in public_names().items():
        if tobj is None:
            missing.append(key)
            continue
        tattr = inspect.getattr_static(torch.Tensor, key.split(".", 1)[1], None) if method \
            else None
        if method and (isinstance(tattr, property) or type(tattr).__name__ in (
                "getset_descriptor", "member_descriptor")):
            specs[key] = (("attr", (), "ANY", "a"),)
            continue
        ovs = _aten_overloads(aten, method)
        python = not (inspect.isbuiltin(tobj) or type(tobj).__name__ in (
            "method_descriptor", "builtin_function_or_method"))
        if python:
            py = _python_overload(tobj, method, ovs[0][1] if ovs else None)
            if py is not None and not any(p[1] == "T*" for p in py[1]) or not ovs:
                ovs = [py] if py is not None else ovs
            elif py is not None:
                # torch's Python wrapper takes the tensors as varargs (``*tensors``): the
                # ATen overloads' tensor list is spread when called ("s")
                ovs = [o[:3] + (o[3] + "s",) if o[1] and o[1][0][1] == "T[]" else o
                       for o in ovs]
        if not ovs:
            ovs = [("unknown", (), "ANY", "")]
        specs[key] = tuple(ovs)
    return specs, missing


def render(specs, missing):
    import torch
    lines = ['"""Signatures of tapegrad\'s public API as PyTorch %s declares them.' %
             torch.__version__.split("+")[0], "",
             "GENERATED by ``python -m tapegrad.testing._gen_api_specs`` from torch's ATen "
             "schemas and", "Python signatures: do not edit by hand (see that module for "
             "the format).", '"""', "",
             "TORCH_VERSION = %r" % torch.__version__.split("+")[0], "",
             "# key -> tuple of overloads (overload name, params, returns, flags);",
             "# param = (name, kind, keyword_only[, default]); flags: i in place, v view,",
             "# g random (takes a generator), p python signature, a attribute",
             "SPECS = {"]
    for k in sorted(specs):
        body = pprint.pformat(specs[k], width=95, compact=True)
        body = body.replace("\n", "\n    ")
        lines.append("    %r:\n    %s," % (k, body))
    lines.append("}")
    lines.append("")
    lines.append("# public tapegrad names torch does not have (see _api_hints.EXCLUDED)")
    lines.append("NOT_IN_TORCH = %s" % pprint.pformat(tuple(sorted(missing)), width=95,
                                                      compact=True))
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    specs, missing = build()
    text = render(specs, missing)
    if "--check" in argv:
        with open(OUT) as f:
            same = f.read() == text
        print("up to date" if same else "stale: rerun python -m tapegrad.testing._gen_api_specs")
        return 0 if same else 1
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote %s: %d names, %d not in torch" % (OUT, len(specs), len(missing)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
