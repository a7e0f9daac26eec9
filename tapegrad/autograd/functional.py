"""tapegrad.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp (torch's signatures).

Built on ``autograd.grad``: jvp uses the double-backward trick (the VJP is linear in its
cotangent, so differentiating it against the cotangent gives the JVP), the Hessian products
use ``create_graph=True``. Return conventions follow torch: a Tensor where the argument was a
Tensor, tuples where it was a tuple.
"""
import numpy as np

from .engine import grad as _grad
from .._state import enable_grad
from .higher import _T as _tensor_module, _index_t


def _T():
    import sys
    return sys.modules[__name__.rsplit(".", 2)[0]]        # the tapegrad package


def _as_tuple(x, arg="inputs", fn="vjp"):
    T = _T()
    if isinstance(x, tuple):
        out, was = x, True
    elif isinstance(x, list):
        out, was = tuple(x), True
    else:
        out, was = (x,), False
    for i, t in enumerate(out):
        if not isinstance(t, T.Tensor):
            raise TypeError("The %s given to %s must be either a Tensor or a tuple of Tensors but "
                            "the value at index %d has type %s." % (arg, fn, i, type(t).__name__))
    return out, was


def _grad_preprocess(inputs, create_graph):
    """Inputs that require grad, detached from the caller's graph unless create_graph."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t) if t.dim() else t * 1)
        else:
            out.append(t.detach().requires_grad_(t.is_floating_point()))
    return tuple(out)


def _fill(grads, inputs, strict, what):
    T = _T()
    res = []
    for i, (g, t) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError("The output of the user-provided function is independent of "
                                   "input %d. This is not allowed in strict mode." % i)
            g = T.zeros_like(t)
        res.append(g)
    return tuple(res)


def _post(x, was_tuple, create_graph):
    x = tuple(t if (create_graph or t is None) else t.detach() for t in x)
    return x if was_tuple else x[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    T = _T()
    inputs, in_tuple = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph)
        outputs = func(*inputs)
        outs, out_tuple = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            vs = (T.ones_like(outs[0]),)
        else:
            vs, _ = _as_tuple(v, "v", "vjp")
        grads = _grad(outs, inputs, vs, create_graph=create_graph, retain_graph=True,
                      allow_unused=True) if any(o.requires_grad for o in outs) else (None,) * len(inputs)
    return _post(outs, out_tuple, create_graph), _post(_fill(grads, inputs, strict, "vjp"),
                                                      in_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by differentiating the VJP against its (dummy) cotangent."""
    T = _T()
    inputs, in_tuple = _as_tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        vs = (T.ones_like(inputs[0]),)
    else:
        vs, _ = _as_tuple(v, "v", "jvp")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph)
        outputs = func(*inputs)
        outs, out_tuple = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        us = tuple(T.zeros_like(o).requires_grad_(True) for o in outs)
        gs = _grad(outs, inputs, us, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(gs, vs) if g is not None and g.requires_grad]
        if pairs:
            jv = _grad(tuple(g for g, _ in pairs), us, tuple(vv for _, vv in pairs),
                       create_graph=create_graph, allow_unused=True)
        else:
            jv = (None,) * len(us)
    return _post(outs, out_tuple, create_graph), _post(_fill(jv, outs, strict, "jvp"),
                                                      out_tuple, create_graph)


def _stack_rows(rows, shape, dtype):
    """Stack flat row tensors into one tensor of ``shape`` (keeps their graphs)."""
    T = _T()
    m = rows[0].numel() if rows else 0
    total = len(rows) * m
    acc = None
    for i, r in enumerate(rows):
        idx = np.arange(i * m, (i + 1) * m, dtype=np.int64)
        piece = _index_t(_tensor_module(), r.reshape(-1), "segsum", idx, total, 1.0)
        acc = piece if acc is None else acc + piece
    if acc is None:
        return T.zeros(shape, dtype=dtype)
    return acc.reshape(shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: out.shape + in.shape per (output, input) pair."""
    T = _T()
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    inputs, in_tuple = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph)
        outputs = func(*inputs)
        outs, out_tuple = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        result = []
        for o in outs:
            flat = o.reshape(-1)
            per_input = [[] for _ in inputs]
            for i in range(flat.numel()):
                if o.requires_grad:
                    gs = _grad(flat[i], inputs, retain_graph=True, create_graph=create_graph,
                               allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                for j, (g, t) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError("Output %d of the user-provided function is "
                                               "independent of input %d. This is not allowed in "
                                               "strict mode." % (0, j))
                        g = T.zeros_like(t)
                    per_input[j].append(g if create_graph else g.detach())
            row = tuple(_stack_rows(rows, tuple(o.shape) + tuple(t.shape), t.dtype)
                        for rows, t in zip(per_input, inputs))
            result.append(row if in_tuple else row[0])
    if out_tuple:
        return tuple(result)
    return result[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: in.shape + in.shape per pair of inputs."""
    inputs_t, in_tuple = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = func(*xs)
        outs, _ = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "containing a single element.")
        gs = _grad(outs[0], xs, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else _T().zeros_like(x) for g, x in zip(gs, xs))
    res = jacobian(gradient, inputs_t, create_graph=create_graph, strict=strict)
    if in_tuple:
        return res
    return res[0][0] if isinstance(res[0], tuple) else res[0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    inputs, in_tuple = _as_tuple(inputs, "inputs", "vhp")
    vs, _ = _as_tuple(v, "v", "vhp") if v is not None else ((None,), False)
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph)
        out = func(*inputs)
        outs, _ = _as_tuple(out, "outputs of the user-provided function", "vhp")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor "
                               "containing a single element.")
        if v is None:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single "
                                   "element.")
            vs = (_T().ones_like(inputs[0]),)
        gs = _grad(outs[0], inputs, create_graph=True, allow_unused=True)
        dot = None
        for g, vv in zip(gs, vs):
            if g is not None:
                term = (g * vv).sum()
                dot = term if dot is None else dot + term
        if dot is not None and dot.requires_grad:
            res = _grad(dot, inputs, create_graph=create_graph, allow_unused=True)
        else:
            res = (None,) * len(inputs)
    return (outs[0] if create_graph else outs[0].detach(),
            _post(_fill(res, inputs, strict, "vhp"), in_tuple, create_graph))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func (equal to v^T H: the Hessian is symmetric)."""
    return vhp(func, inputs, v, create_graph=create_graph, strict=strict)
