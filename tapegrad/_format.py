"""torch-style ``repr`` of tensors, following torch/_tensor_str.py: the same formatter (integer
mode, scientific mode when values span more than 1000x or exceed 1e8 / fall below 1e-4, widths
from the nonzero finite values), line wrapping at 80 columns, summarisation above 1000
elements, and the same suffixes (``dtype=``, ``grad_fn=<...>``, ``requires_grad=True``,
``size=`` of empty tensors)."""
import math

import numpy as np
from .tensor import get_default_dtype

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["set_printoptions"]


class _Opts:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _Opts()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    def __init__(self, a):
        self.floating = a.dtype.kind == "f"
        self.bool = a.dtype.kind == "b"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        flat = a.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
        else:
            f = flat.astype(np.float64)
            nz = f[np.isfinite(f) & (f != 0)]
            if nz.size:
                ab = np.abs(nz)
                mn, mx = ab.min(), ab.max()
                self.int_mode = bool(np.all(nz == np.ceil(nz)))
                # (as torch/_tensor_str.py: a forced sci_mode decides the widths too)
                self.sci_mode = (mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
                                 if PRINT_OPTS.sci_mode is None else bool(PRINT_OPTS.sci_mode))
                if self.sci_mode:
                    spec, extra = "{:.%de}" % p, 0
                elif self.int_mode:
                    spec, extra = "{:.0f}", 1          # the appended "."
                else:
                    spec, extra = "{:.%df}" % p, 0
                for v in nz.tolist():
                    self.max_width = max(self.max_width, len(spec.format(v)) + extra)

    def width(self):
        return self.max_width

    def format(self, v):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                ret = ("{:%d.%de}" % (self.max_width, p)).format(v)
            elif self.int_mode:
                ret = "%.0f" % v
                if not (math.isinf(v) or math.isnan(v)):
                    ret += "."
            else:
                ret = ("{:.%df}" % p).format(v)
        else:
            ret = str(v)
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if a.shape[0] > 2 * e:
        parts = [_summarized(a[i]) for i in list(range(e)) + list(range(a.shape[0] - e, a.shape[0]))]
    else:
        parts = [_summarized(x) for x in a]
    return np.stack(parts)


def _pyval(a, v):
    return bool(v) if a.dtype.kind == "b" else (int(v) if a.dtype.kind in "iu" else float(v))


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(_pyval(a, v)) for v in a[:e]] + [" ..."]
                + [fmt.format(_pyval(a, v)) for v in a[-e:]])
    else:
        data = [fmt.format(_pyval(a, v)) for v in a]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(_pyval(a, a[()]))
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_str_with(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_str_with(a[i], indent + 1, summarize, fmt)
                     for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_str_with(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(a, indent):
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _str_with(a, indent, summarize, fmt)


def _add_suffixes(s, suffixes, indent):
    parts = [s]
    last = len(s) - s.rfind("\n") + 1
    for suf in suffixes:
        if last + len(suf) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suf)
            last = indent + len(suf)
        else:
            parts.append(", " + suf)
            last += len(suf) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor(", indent=None):
    a = np.asarray(t._data)
    indent = len(prefix) if indent is None else indent
    suffixes = []
    default = t._dtype is get_default_dtype() or t._dtype.name in ("int64", "bool")
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if t._dtype is not get_default_dtype():
            suffixes.append("dtype=torch.%s" % t._dtype.name)
        body = "[]"
    else:
        if not default:
            suffixes.append("dtype=torch.%s" % t._dtype.name)
        body = _tensor_str(a, indent)
    if t._tape is not None:
        suffixes.append("grad_fn=<%s>" % type(t.grad_fn).__name__)
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def __repr__(self):
        return tensor_repr(self)

    __str__ = __repr__
