"""gradcheck / gradgradcheck with the signatures, defaults and semantics of
``torch.autograd.gradcheck`` / ``torch.autograd.gradgradcheck``.

The analytic Jacobian comes from one ``autograd.grad`` call per output element (one-hot
cotangents, ``retain_graph=True``); the numerical one from central finite differences, the
differences of the outputs taken in float64. The checks run by torch are all here: inputs
(double precision warning, stride-0 inputs), the Jacobian comparison with ``allclose``
(``|a - n| <= atol + rtol * |n|``), reentrancy (``nondet_tol``), gradient dtypes and sizes,
"backward multiplied by grad_output", undefined (all-zero) output gradients, functions without
differentiable outputs, the fast mode (``v^T J u`` for random ``u``, ``v``), and batched
gradients (through ``autograd.grad(..., is_grads_batched=True)``).

Differences from torch, all deliberate:

* The failure message adds the worst entry of the mismatching Jacobian: its (output element,
  input element) index, both values, and the tolerance it broke.
* Perturbed inputs are passed to ``func`` as fresh tensors (torch perturbs the input's storage
  in place); ``func`` must therefore use its arguments, not tensors captured by closure.
* There is no "undefined" gradient in tapegrad, so ``check_undefined_grad`` checks that
  all-zero output gradients give zero (or None) input gradients, which is what an undefined
  gradient materializes to.
* ``check_forward_ad`` / ``check_fwd_over_rev`` / ``masked=True`` raise NotImplementedError
  (tapegrad has no forward-mode AD and no sparse tensors).

The implementation only uses the torch-like API (``lib.tensor``, ``lib.autograd.grad``,
``Tensor.detach().numpy()``), where ``lib`` is the module the input tensors come from; the
same function therefore also runs on real torch tensors, which is how its verdicts are checked
against ``torch.autograd.gradcheck`` in the tests.
"""
import sys
import warnings

import numpy as np

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck", "get_numerical_jacobian",
           "get_analytical_jacobian"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck on a failed check (torch's GradcheckError)."""


# ------------------------------------------------------------------------------ helpers
def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_tensor(x):
    return hasattr(x, "requires_grad") and hasattr(x, "grad_fn") and hasattr(x, "detach")


def _lib_of(tensors):
    """The torch-like module the tensors belong to (tapegrad, or torch itself)."""
    for t in tensors:
        if _is_tensor(t):
            root = type(t).__module__.split(".")[0]
            mod = sys.modules.get(root)
            if mod is not None and hasattr(mod, "autograd"):
                return mod
    import tapegrad
    return tapegrad


def _is_float(t):
    return _is_tensor(t) and t.is_floating_point()


def _np(t):
    """A float64 copy of a tensor's values."""
    return np.array(t.detach().numpy(), dtype=np.float64, copy=True)


def _np_native(t):
    """A copy of a tensor's values in its own dtype."""
    return np.array(t.detach().numpy(), copy=True)


def _new_like(lib, arr, like, requires_grad=False):
    return lib.tensor(np.array(arr, copy=True), dtype=like.dtype, requires_grad=requires_grad)


def _shape(t):
    return tuple(t.shape)


def _numel(t):
    return int(np.prod(_shape(t), dtype=np.int64))


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if _is_tensor(o) and o.requires_grad)


def _diff_inputs(tupled_inputs):
    """(indices, tensors) of the inputs that require grad."""
    idx = [i for i, t in enumerate(tupled_inputs) if _is_tensor(t) and t.requires_grad]
    return idx, [tupled_inputs[i] for i in idx]


def _strides(t):
    try:
        return tuple(t.stride())
    except (AttributeError, TypeError, NotImplementedError):
        try:
            return tuple(np.asarray(t.detach().numpy()).strides)
        except Exception:       # noqa: BLE001 - a tensor we cannot look into: no check
            return None


def _fmt(lib, J, dtype=None):
    """A Jacobian printed as the library prints tensors (torch's messages print tensors), in
    torch's dtype for it: the output's for the numerical one, the input's for the analytical
    one."""
    try:
        return str(lib.tensor(J, dtype=dtype if dtype is not None else lib.float64))
    except Exception:           # noqa: BLE001
        return np.array2string(J, precision=4, threshold=400)


def _scalar(x, t):
    """A fast-mode quantity as torch prints it: a Python float of ``t``'s precision."""
    return repr(float(np.asarray(x, _np_native(t).dtype if _is_tensor(t) else np.float64)))


def _idx(shape, flat):
    """The multi-index of flat position ``flat`` in ``shape`` (``()`` for 0-dim)."""
    if not shape:
        return ()
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _allclose(a, n, rtol, atol):
    if a.shape != n.shape:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))


def _worst(a, n, rtol, atol):
    """(flat position, ratio) of the entry that breaks allclose the most."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tol = atol + rtol * np.abs(n)
        diff = np.abs(a - n)
        ratio = np.where(np.isnan(diff), np.inf, diff / np.where(tol > 0, tol, np.finfo(float).tiny))
    k = int(np.argmax(ratio)) if ratio.size else 0
    return k, ratio.reshape(-1)[k] if ratio.size else 0.0


def _mismatch_msg(lib, a, n, out_i, in_j, out_t, in_t, arg_j, rtol, atol):
    """torch's "Jacobian mismatch" message, plus the worst entry and its indices."""
    msg = ("Jacobian mismatch for output %d with respect to input %d,\nnumerical:%s\nanalytical:%s\n"
           % (out_i, in_j, _fmt(lib, n, out_t.dtype), _fmt(lib, a, in_t.dtype)))
    if a.size:
        k, _ = _worst(a, n, rtol, atol)
        r, c = np.unravel_index(k, a.shape)       # rows: input elements, cols: output elements
        av, nv = float(a[r, c]), float(n[r, c])
        oi, ii = _idx(_shape(out_t), int(c)), _idx(_shape(in_t), int(r))
        msg += ("\nWorst entry: d(output %d)%s / d(input %d)%s  [input %d is argument #%d of inputs; "
                "Jacobian entry [%d, %d]]\n  analytical = %.10g\n  numerical  = %.10g\n"
                "  |analytical - numerical| = %.3g > atol + rtol * |numerical| = %.3g\n"
                % (out_i, list(oi) if oi else "", in_j, list(ii) if ii else "", in_j, arg_j, r, c,
                   av, nv, abs(av - nv),
                   atol + rtol * abs(nv)))
    return msg


# ------------------------------------------------------------------------- numerical side
def _call(func, args):
    return _as_tuple(func(*args))


def _perturbed_outputs(func, inputs, i, arr, lib):
    args = list(inputs)
    x = inputs[i]
    args[i] = _new_like(lib, arr, x, requires_grad=x.requires_grad)
    return _call(func, args)


def _check_same(o1, o2, eps, idx):
    on = "on index %s " % (idx,) if idx is not None else ""
    if _shape(o1) != _shape(o2):
        raise AssertionError("Expected `func` to return outputs with the same shape when inputs "
                             "are perturbed %sby %s, but got: shapes %s and %s."
                             % (on, eps, _shape(o1), _shape(o2)))
    if o1.dtype != o2.dtype:
        raise AssertionError("Expected `func` to return outputs with the same dtype when inputs "
                             "are perturbed %sby %s, but got: dtypes %s and %s."
                             % (on, eps, o1.dtype, o2.dtype))


def _numerical_jacobian(func, inputs, out_pos, eps, lib, in_pos=None):
    """J[i][j]: ndarray (numel(input i), numel(output j)) by central differences, for the
    differentiable inputs i (or ``in_pos``) and the output positions ``out_pos``."""
    if in_pos is None:
        in_pos, _ = _diff_inputs(inputs)
    jac = []
    for i in in_pos:
        x = inputs[i]
        base = _np_native(x)
        flat = base.reshape(-1)
        cols = None
        for k in range(flat.size):
            orig = float(flat[k])
            lo, hi = base.copy(), base.copy()
            lo.reshape(-1)[k] = orig - eps
            hi.reshape(-1)[k] = orig + eps
            oa = _perturbed_outputs(func, inputs, i, lo, lib)
            ob = _perturbed_outputs(func, inputs, i, hi, lib)
            if cols is None:
                cols = [np.zeros((flat.size, _numel(oa[j]))) for j in out_pos]
            for c, j in enumerate(out_pos):
                _check_same(oa[j], ob[j], eps, _idx(base.shape, k))
                cols[c][k, :] = ((_np(ob[j]) - _np(oa[j])) / (2 * eps)).reshape(-1)
        if cols is None:        # an empty input: no perturbation possible
            outs = _call(func, inputs)
            cols = [np.zeros((0, _numel(outs[j]))) for j in out_pos]
        jac.append(cols)
    return jac


def _numerical_directional(func, inputs, i, u, eps, lib):
    """(f(x_i + eps u) - f(x_i - eps u)) / (2 eps) for every output, flattened, float64."""
    x = inputs[i]
    base = _np_native(x)
    d = (u.reshape(base.shape) * eps).astype(base.dtype)
    oa = _perturbed_outputs(func, inputs, i, base - d, lib)
    ob = _perturbed_outputs(func, inputs, i, base + d, lib)
    out = []
    for a, b in zip(oa, ob):
        if _is_float(a):
            _check_same(a, b, eps, None)
            out.append(((_np(b) - _np(a)) / (2 * eps)).reshape(-1))
        else:
            out.append(None)
    return out


# ------------------------------------------------------------------------- analytic side
def _vjp(lib, output, diff_inputs, g, retain=True):
    go = _new_like(lib, g, output)
    return lib.autograd.grad([output], list(diff_inputs), [go], retain_graph=retain,
                             allow_unused=True)


def _stack(lib, vjps, diff_inputs, n_out):
    """Columns of J[i] from the VJPs; also whether sizes and dtypes were right."""
    sizes_ok, types_ok = True, True
    jac = [np.zeros((_numel(x), n_out)) for x in diff_inputs]
    for col, grads in enumerate(vjps):
        for i, (g, x) in enumerate(zip(grads, diff_inputs)):
            if g is None:
                continue
            if _shape(g) != _shape(x):
                sizes_ok = False
                continue
            if g.dtype != x.dtype:
                types_ok = False
            jac[i][:, col] = _np(g).reshape(-1)
    return jac, sizes_ok, types_ok


def _analytical_jacobian(lib, output, diff_inputs, nondet_tol, check_grad_dtypes, v=None):
    """J[i] (numel(input i), numel(output)) from one VJP per output element (or, given ``v``,
    the single column v^T J), computed twice to check reentrancy."""
    def rows():
        if v is not None:
            return [_vjp(lib, output, diff_inputs, v.reshape(_shape(output)))]
        n = _numel(output)
        out = []
        g = np.zeros(_shape(output), dtype=_np_native(output).dtype)
        for k in range(n):
            g.reshape(-1)[:] = 0
            g.reshape(-1)[k] = 1
            out.append(_vjp(lib, output, diff_inputs, g))
        return out
    n_out = 1 if v is not None else _numel(output)
    j1, sizes_ok, types_ok = _stack(lib, rows(), diff_inputs, n_out)
    j2, _, _ = _stack(lib, rows(), diff_inputs, n_out)
    reentrant = all(a.size == 0 or np.max(np.abs(a - b)) <= nondet_tol for a, b in zip(j1, j2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            "numerical gradient.The tolerance for nondeterminism was %s." % (nondet_tol,))
    return j1


# ------------------------------------------------------------------------------ checks
def _check_inputs(tupled_inputs, lib):
    any_rg = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp.dtype != lib.float64:
                warnings.warn("Input #%d requires gradient and is not a double precision floating "
                              "point or complex. This check will likely fail if all the inputs "
                              "are not of double precision floating point or complex. " % idx,
                              stacklevel=4)
            st = _strides(inp)
            if st is not None and not all(s > 0 or n <= 1 for s, n in zip(st, _shape(inp))):
                raise RuntimeError(
                    "The %dth input has a dimension with stride 0. gradcheck only supports inputs "
                    "that are non-overlapping to be able to compute the numerical gradients "
                    "correctly. You should call .contiguous on the input before passing it to "
                    "gradcheck." % idx)
            any_rg = True
    if not any_rg:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


def _check_no_differentiable_outputs(func, inputs, func_out, eps, lib):
    pos = [j for j, o in enumerate(func_out) if _is_float(o)]
    for per_input in _numerical_jacobian(func, inputs, pos, eps, lib):
        for J in per_input:
            if np.count_nonzero(J):
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, lib):
    if not outputs:
        return _check_no_differentiable_outputs(func, inputs, func_out, eps, lib)
    out_pos = [j for j, o in enumerate(func_out) if _is_tensor(o) and o.requires_grad]
    in_pos, diff_inputs = _diff_inputs(inputs)
    numerical = _numerical_jacobian(func, inputs, out_pos, eps, lib)      # [input][output]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(lib, o, diff_inputs, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][i]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch_msg(lib, a, n, i, j, o, diff_inputs[j], in_pos[j],
                                                   rtol, atol))
    return True


def _unit_vec(rng, n):
    v = rng.random(n)
    nrm = np.linalg.norm(v)
    return v / nrm if nrm > 0 else v


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, lib):
    in_pos, diff_inputs = _diff_inputs(inputs)
    rng = np.random.default_rng(0)          # its own generator: the user's RNG is untouched
    all_u = [_unit_vec(rng, _numel(x)) for x in diff_inputs]
    all_v = [_unit_vec(rng, _numel(o)) for o in outputs]
    out_pos = [j for j, o in enumerate(func_out) if _is_tensor(o) and o.requires_grad]
    jvps = [_numerical_directional(func, inputs, i, u, eps, lib) for i, u in zip(in_pos, all_u)]
    if not outputs:
        for per_input in jvps:
            for d in per_input:
                if d is not None and d.size and np.max(np.abs(d)) > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    for j, (o, v) in enumerate(zip(outputs, all_v)):
        vJ = _analytical_jacobian(lib, o, diff_inputs, nondet_tol, check_grad_dtypes, v=v)
        for i, u in enumerate(all_u):
            a = float(vJ[i][:, 0] @ u)
            n = float(jvps[i][out_pos[j]] @ v)
            tol = atol * float(u.sum()) * float(v.sum())
            if not _allclose(np.array(a), np.array(n), rtol, tol):
                msg = ("Jacobian mismatch for output %d with respect to input %d,\nnumerical:%s\n"
                       "analytical:%s\n" % (j, i, _scalar(n, o), _scalar(a, diff_inputs[i])))
                msg += _slow_mode_error(func, inputs, o, out_pos[j], i, diff_inputs, in_pos,
                                        rtol, atol, eps, lib, j)
                raise GradcheckError(msg)
    return True


def _slow_mode_error(func, inputs, o, out_p, i, diff_inputs, in_pos, rtol, atol, eps, lib, j):
    n = _numerical_jacobian(func, inputs, [out_p], eps, lib, in_pos=[in_pos[i]])[0][0]
    a = _analytical_jacobian(lib, o, diff_inputs, float("inf"), False)[i]
    msg = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
           "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
           "Numerical:\n %s\nAnalytical:\n%s\n\nThe max per-element difference (slow mode) is: %s.\n"
           % (_fmt(lib, n, o.dtype), _fmt(lib, a, diff_inputs[i].dtype),
              float(np.max(np.abs(n - a))) if n.size else 0.0))
    if _allclose(a, n, rtol, atol):
        msg += ("\nFast gradcheck failed but element-wise differences are small. This means that "
                "the\ntest might've passed in slow_mode!\n")
    else:
        msg += _mismatch_msg(lib, a, n, j, i, o, diff_inputs[i], in_pos[i], rtol, atol).split(
            "\n\n", 1)[-1]
    return msg


def _test_batched_grad(lib, inputs, output, output_idx):
    _, diff_inputs = _diff_inputs(inputs)
    rng = np.random.default_rng(1)
    gos = [rng.standard_normal(_shape(output)) for _ in range(2)]

    def vjp(g):
        res = _vjp(lib, output, diff_inputs, g)
        return [np.zeros(_shape(x)) if r is None else _np(r) for r, x in zip(res, diff_inputs)]
    expected = [np.stack(shards) for shards in zip(*[vjp(g) for g in gos])]
    try:
        stacked = _new_like(lib, np.stack(gos), output)
        res = lib.autograd.grad([output], list(diff_inputs), [stacked], retain_graph=True,
                                allow_unused=True, is_grads_batched=True)
    except RuntimeError as ex:
        raise GradcheckError("While computing batched gradients, got: %s\n\ngradcheck or "
                             "gradgradcheck failed while testing batched gradient computation."
                             % (ex,)) from ex
    for input_idx, (r, e) in enumerate(zip(res, expected)):
        got = np.zeros_like(e) if r is None else _np(r)
        if got.shape == e.shape and np.allclose(got, e):
            continue
        raise GradcheckError("For output %d and input %d:\n\ngradcheck or gradgradcheck failed "
                             "while testing batched gradient computation.\n\nGot:\n%s\n\n"
                             "Expected:\n%s" % (output_idx, input_idx, got, e))
    return True


def _test_backward_mul_by_grad_output(lib, outputs, inputs):
    _, diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    zeros = [_new_like(lib, np.zeros(_shape(o)), o) for o in outputs]
    grads = lib.autograd.grad(list(outputs), diff_inputs, zeros, allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if np.any(_np(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if _shape(gi) != _shape(di):
            raise GradcheckError("grad is incorrect size")
    return True


_UNDEF = 'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'


def _test_undefined_backward_mode(lib, func, inputs):
    _, diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    outs = _differentiable_outputs(func(*inputs))
    if not outs:
        return True
    zeros = [_new_like(lib, np.zeros(_shape(o)), o) for o in outs]
    try:
        grads = lib.autograd.grad(list(outs), diff_inputs, zeros, allow_unused=True)
    except RuntimeError as e:
        raise GradcheckError("Expected backward function to handle undefined output grads. "
                             + _UNDEF) from e
    for gi in grads:
        if gi is not None and np.any(_np(gi) != 0):
            raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                 "output grads are undefined or zero. " + _UNDEF)
    return True


# ------------------------------------------------------------------------------ public API
def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against central finite differences
    (``torch.autograd.gradcheck``).

    ``func`` takes the tensors of ``inputs`` (a tensor or a tuple, non-tensors passed through)
    and returns a tensor or a tuple of tensors. Every floating input with ``requires_grad`` is
    perturbed by ``+-eps``, one element at a time; the central difference of every output is
    compared with the analytic Jacobian (one backward per output element) with
    ``|analytical - numerical| <= atol + rtol * |numerical|``. Use float64 inputs: a float32
    input requiring grad gets torch's warning and will likely fail.

    Returns True; on a failed check raises :class:`GradcheckError` (whose message shows both
    Jacobians and the worst entry with its output and input indices), or returns False when
    ``raise_exception=False``.
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to "
                             "be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be "
                             "True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad "
                             "to be True")
    if check_forward_ad:
        raise NotImplementedError("gradcheck(check_forward_ad=True): tapegrad has no forward-mode "
                                  "AD")
    if masked:
        raise NotImplementedError("gradcheck(masked=True) is for sparse tensors, which tapegrad "
                                  "does not have")
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                                 check_grad_dtypes, check_batched_grad, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, check_batched_grad, fast_mode):
    tupled = _as_tuple(inputs)
    lib = _lib_of(tupled)
    _check_inputs(tupled, lib)
    func_out = _as_tuple(func(*tupled))
    outputs = _differentiable_outputs(func_out)
    run = _fast_gradcheck if fast_mode else _slow_gradcheck
    run(func, func_out, tupled, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, lib)
    for i, o in enumerate(outputs):
        if check_batched_grad:
            _test_batched_grad(lib, tupled, o, i)
    if outputs:
        _test_backward_mul_by_grad_output(lib, outputs, tupled)
    if check_undefined_grad:
        _test_undefined_backward_mode(lib, func, tupled)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second-order gradients (``torch.autograd.gradgradcheck``): gradcheck of the map
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``, i.e. the analytic second order (backward through the backward) against
    finite differences of the first-order VJP.

    ``grad_outputs`` default to random tensors in [-1, 1) shaped like the differentiable outputs
    (drawn from a fixed-seed generator, so a failure reproduces). Needs ``create_graph=True``
    support in ``autograd.grad``; raises whatever it raises (NotImplementedError) otherwise.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                             "True")
    tupled_inputs = _as_tuple(inputs)
    lib = _lib_of(tupled_inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            lib.tensor(rng.uniform(-1, 1, _shape(x)),
                       dtype=x.dtype if x.is_floating_point() else lib.float64,
                       requires_grad=True)
            for x in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_args_indices = {i for i, x in enumerate(tupled_inputs)
                               if _is_tensor(x) and x.requires_grad}
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs)
                                if _is_tensor(x) and x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_args_indices else x
                           for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs_ = tuple(x.requires_grad_() if i in diff_grad_output_indices else x
                              for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = tuple(x for i, x in enumerate(input_args)
                                if i in diff_input_args_indices)
        grad_inputs = lib.autograd.grad(outputs, diff_input_args, grad_outputs_,
                                        create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)


# torch keeps these on the gradcheck module; `tapegrad.autograd.gradcheck.GradcheckError` works too
gradcheck.GradcheckError = GradcheckError
gradgradcheck.GradcheckError = GradcheckError


def get_numerical_jacobian(func, inputs, eps=1e-6):
    """Numerical Jacobians as float64 arrays: ``J[i][j]`` has shape (numel(input i),
    numel(output j)) for the inputs requiring grad and the floating outputs (torch's layout)."""
    tupled = _as_tuple(inputs)
    lib = _lib_of(tupled)
    outs = _call(func, tupled)
    return _numerical_jacobian(func, tupled, [j for j, o in enumerate(outs) if _is_float(o)],
                               eps, lib)


def get_analytical_jacobian(func, inputs):
    """Analytic Jacobians in the layout of :func:`get_numerical_jacobian` (differentiable
    outputs only; an output that does not require grad gets zeros)."""
    tupled = _as_tuple(inputs)
    lib = _lib_of(tupled)
    outs = _call(func, tupled)
    _, diff = _diff_inputs(tupled)
    per_out = []
    for o in outs:
        if not _is_float(o):
            continue
        if o.requires_grad:
            per_out.append(_analytical_jacobian(lib, o, diff, float("inf"), False))
        else:
            per_out.append([np.zeros((_numel(x), _numel(o))) for x in diff])
    return [list(col) for col in zip(*per_out)] if per_out else [[] for _ in diff]
