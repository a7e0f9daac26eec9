"""torch-style ``repr`` of tensors: ``tensor([1., 2.], requires_grad=True)``."""
import numpy as np


def _fmt_float(a):
    finite = a[np.isfinite(a)] if a.size else a
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max(initial=0) < 1e8:
        return lambda v: ("%.0f." % v) if np.isfinite(v) else str(v)
    mx = np.abs(finite).max(initial=0)
    mn = np.abs(finite[finite != 0]).min(initial=np.inf) if finite.size else 0
    if mx >= 1e8 or (mn < 1e-4 and mn != np.inf):
        return lambda v: "%.4e" % v if np.isfinite(v) else str(v)
    return lambda v: "%.4f" % v if np.isfinite(v) else str(v)


def _body(a, dtype_name):
    if a.dtype.kind == "f":
        f = _fmt_float(a.astype(np.float64))
    elif a.dtype.kind == "b":
        def f(v):
            return "True" if v else "False"
    else:
        def f(v):
            return str(int(v))
    if a.ndim == 0:
        return f(a[()])
    strs = np.vectorize(f, otypes=[object])(a) if a.size else np.zeros(a.shape, object)
    width = max((len(s) for s in strs.ravel()), default=0)

    def rec(x, depth):
        if x.ndim == 1:
            return "[" + ", ".join(s.rjust(width) for s in x) + "]"
        sep = "," + "\n" * (x.ndim - 1) + " " * (depth + 8)
        return "[" + sep.join(rec(s, depth + 1) for s in x) + "]"
    return rec(strs, 0)


def tensor_repr(t):
    a = np.asarray(t._data)
    body = _body(a, t._dtype.name)
    extras = []
    default = t._dtype.name in ("float32", "int64", "bool")
    if t._dtype.name == "float32":
        from .tensor import get_default_dtype
        default = get_default_dtype().name == "float32"
    if a.size == 0:
        body = "[]" if a.ndim <= 1 else body
        if a.ndim > 1 or True:
            pass
    if not default:
        extras.append("dtype=torch.%s" % t._dtype.name)
    if t._tape is not None:
        extras.append("grad_fn=<%s>" % type(t.grad_fn).__name__)
    elif t._rg:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
