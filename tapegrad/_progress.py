"""Long batches: progress reports, reductions in pieces, and the door to Dask.

``tapegrad.func.vmap(f, in_dims, out_dims, progress=None, reduce=None)`` returns the wrapper
made here (``scaled``) around the local batched vmap:

- arguments that are Dask arrays go to ``tapegrad._dask`` (detected by the type's module name:
  nothing here imports dask);
- ``reduce="sum"`` / ``"mean"`` evaluates the batch in pieces and adds up each piece's
  per-point results, so the per-point results of the whole batch never exist at once;
- ``progress``: ``True`` shows a bar (tqdm when installed, a plain line otherwise) on stderr,
  ``False`` never, ``None`` (the default) only when stderr is a terminal and the job is
  projected to take more than ``AUTO_SECONDS``.

Progress needs the batched interpreter's driver to stop between chunks: ``run_batch`` replaces
the driver's single call in ``CompiledTape.batch``. Without a bar it is that single call (one
thread-local lookup and one multiplication more); with one, it runs the same points in parts
that start on chunk boundaries (each point keeps its lane, so the results are bit for bit those
of one call) and reports after each part.
"""
import sys
import threading
import time

import numpy as np

from .tensor import Tensor, _wrap

# A batch below this much work (points x (tape entries + lanes per point)) is never split nor
# checked for a terminal. Rosenbrock n=10 (10 entries + 74 lanes a point, ~28 ns a point on 2
# threads): 12 million points, ~0.3 s.
AUTO_WORK = 1_000_000_000
AUTO_SECONDS = 2.0          # the default shows a bar when the job is projected longer than this
PART_SECONDS = 0.2          # target time of one part between reports
PIECE_BYTES = 64 << 20      # reduce=: per-point results of one piece at most this big
PIECE_MIN, PIECE_MAX = 1024, 1 << 20

# run()'s positional arguments (tapegrad/_compiled/_driver.py)
_N4, _N8, _NE, _B, _P, _G, _INS, _OUTS, _CTS, _GRADS = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17

_tls = threading.local()


def _interactive():
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Plain:
    """A one-line progress report on stderr when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.n, self.desc, self._last = total, 0, desc, 0.0
        self._show(True)

    def _show(self, force=False):
        now = time.perf_counter()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        pct = 100.0 * self.n / self.total if self.total else 100.0
        sys.stderr.write("\r%s: %3.0f%% %d/%d points" % (self.desc, pct, self.n, self.total))
        sys.stderr.flush()

    def update(self, n):
        self.n += n
        self._show()

    def refresh(self):
        self._show(True)

    def close(self):
        self._show(True)
        sys.stderr.write("\n")
        sys.stderr.flush()


def _bar(total, initial, desc):
    try:
        from tqdm import tqdm           # deferred: tqdm is an optional extra ("progress")
    except ImportError:
        b = _Plain(total, desc)
        b.update(initial)
        return b
    return tqdm(total=total, initial=initial, desc=desc, unit="pt", unit_scale=True,
                file=sys.stderr, dynamic_ncols=True)


class Scope:
    """The progress of one vmap call: points done, points to do, the bar once shown.
    ``mode``: True (show from the start), None (show once the job is projected long and
    stderr is a terminal), False (never)."""

    def __init__(self, mode, desc):
        self.mode, self.desc = mode, desc
        self.total = self.done = 0
        self.fixed = False          # the total was given up front (reduce=): batches add none
        self.bar = None
        self.t0 = time.perf_counter()
        self.tty = mode is True or (mode is None and _interactive())

    def expect(self, n, fixed=False):
        """n more point evaluations to come (a batch, or the points a variant evaluates
        again); ``fixed``: the whole job's points, given once (later batches add none)."""
        if self.fixed:
            return
        self.fixed = fixed
        self.total += n
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()
        elif self.mode is True:
            self.bar = _bar(self.total, self.done, self.desc)

    def advance(self, n):
        if self.fixed:
            n = min(n, self.total - self.done)
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        if self.mode is None and self.tty and self.done < self.total:
            spent = time.perf_counter() - self.t0
            if spent * self.total / self.done > AUTO_SECONDS:
                self.bar = _bar(self.total, self.done, self.desc)

    def wants_parts(self, work):
        """Whether a batch of ``work`` (``_work``) should run in parts (to report between)."""
        return self.bar is not None or (self.tty and self.mode is not False and work >= AUTO_WORK)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def current():
    return getattr(_tls, "scope", None)


class scope:
    """``with scope(mode, desc) as sc:`` the progress of the batches run inside."""

    def __init__(self, mode, desc):
        self.sc = Scope(mode, desc)

    def __enter__(self):
        self.prev = getattr(_tls, "scope", None)
        _tls.scope = self.sc
        return self.sc

    def __exit__(self, *exc):
        _tls.scope = self.prev
        self.sc.close()


def run_batch(run, args):
    """The batched interpreter's driver call ``run(*args)`` (``CompiledTape.batch``): one
    call, unless a progress report is wanted, then the same points in parts."""
    sc = getattr(_tls, "scope", None)
    if sc is None:
        if _work(args) < AUTO_WORK or not _interactive():
            run(*args)
            return
        with scope(None, "vmap") as sc:         # a long batch outside any vmap scope
            _parts(run, args, sc)
        return
    if sc.mode is False:
        run(*args)
        return
    _parts(run, args, sc)


def _work(args):
    return args[_P] * (args[_NE] + args[_N4] + args[_N8])


def _shift(args, p0, n):
    """run()'s arguments for points p0 .. p0+n of the batch: each table row's address moved
    on by p0 points (input and cotangent rows by their per-point stride, 0 for a row shared
    by all points; output and gradient rows by their element count)."""
    from ._compiled._driver import ADDR, NEL, PSTR, SLOT  # deferred: loads with the first batch
    a = list(args)
    a[_P] = n
    a[_G] = max(1, min(args[_G], -(-n // args[_B])))
    for i, col in ((_INS, PSTR), (_CTS, PSTR), (_OUTS, NEL), (_GRADS, NEL)):
        t = args[i]
        if t.shape[0]:
            t = t.copy()
            t[:, ADDR] += p0 * t[:, col] * (4 + 4 * (t[:, SLOT] != 0))
            a[i] = t
    return tuple(a)


def _parts(run, args, sc):
    P, B, G = args[_P], args[_B], args[_G]
    sc.expect(P)
    if not sc.wants_parts(_work(args)) or P <= B * G:
        run(*args)
        sc.advance(P)
        return
    step = B * G                        # a first part to time; parts start on chunk bounds
    p0 = 0
    while p0 < P:
        n = min(step, P - p0)
        t = time.perf_counter()
        run(*_shift(args, p0, n))
        dt = time.perf_counter() - t
        p0 += n
        sc.advance(n)
        if sc.bar is None and sc.mode is None and p0 < P:
            if dt * (P - p0) / n < AUTO_SECONDS * 0.5:  # short after all: the rest at once
                run(*_shift(args, p0, P - p0))
                sc.advance(P - p0)
                return
        per = dt / n if dt > 0 else 1e-9
        step = max(B * G, int(PART_SECONDS / per) // (B * G) * (B * G))


# ----------------------------------------------------------------------------- the wrapper
def _has_dask(x):
    t = type(x)
    if t.__module__.startswith("dask"):
        return True
    if t is tuple or t is list:
        return any(_has_dask(v) for v in x)
    if t is dict:
        return any(_has_dask(v) for v in x.values())
    return False


def _name(func):
    tr = getattr(func, "_tg_transform", None)
    if tr is not None:
        return "vmap(%s(%s))" % (tr[0], getattr(tr[1], "__name__", "f"))
    return "vmap(%s)" % getattr(func, "__name__", type(func).__name__)


def scaled(local, func, in_dims, out_dims, progress, reduce, tf):
    """The public vmap wrapper around ``local`` (func.vmap's batched wrapper). ``tf``: the
    ``tapegrad.func`` module (its trees and transforms; this module ranks below it)."""
    if progress not in (None, True, False):
        raise TypeError("vmap: progress must be None, True or False, got %r" % (progress,))
    if reduce not in (None, "sum", "mean"):
        raise ValueError("vmap: reduce must be None, 'sum' or 'mean', got %r" % (reduce,))
    if reduce is not None and out_dims != 0:
        raise ValueError("vmap: reduce=%r removes the batch dimension, so out_dims must be 0 "
                         "(got %r)" % (reduce, out_dims))
    desc = _name(func)

    def wrapper(*args, **kwargs):
        if kwargs:                          # passed to func, not batched (torch.func.vmap)
            return tf._vmap_kwargs(wrapper, args, kwargs)
        if any(_has_dask(a) for a in args):
            from . import _dask     # deferred: Dask support, loaded when a Dask array comes
            return _dask.vmap(tf, func, in_dims, out_dims, progress, reduce, args, desc)
        if reduce is not None:
            with scope(progress, desc):
                return _reduced(tf, local, in_dims, reduce, args)
        if progress is None:
            return local(*args)
        with scope(progress, desc):
            return local(*args)
    wrapper._cache = local._cache
    wrapper._tg_vmap = (func, in_dims, out_dims, progress, reduce)
    return wrapper


def _take_range(x, d, i, j):
    """Points i..j of a tree of tensors batched along dim d (None: not batched): views."""
    if d is None:
        return x
    if isinstance(x, Tensor):
        a = x._data
        k = d % a.ndim
        return _wrap(a[(slice(None),) * k + (slice(i, j),)], x._dtype)
    if isinstance(x, (tuple, list)):
        return type(x)(_take_range(v, d, i, j) for v in x)
    if isinstance(x, dict):
        return {k: _take_range(v, d, i, j) for k, v in x.items()}
    return x


def _batch_size(tf, args, dims):
    for a, d in zip(args, dims):
        if d is None:
            continue
        sub = []
        tf._flatten(a, sub)
        if sub:
            return sub[0].shape[d]
    return None


def _reduced(tf, local, in_dims, reduce, args):
    """The sum (or mean) over the batch of ``local(*args)``'s per-point results, evaluated in
    pieces of points (at most ``PIECE_BYTES`` of per-point results each)."""
    dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
    P = _batch_size(tf, args, dims) if len(dims) == len(args) else None
    if P is None:
        return _sum_tree(tf, local(*args), reduce)     # local raises vmap's own errors
    current().expect(P, fixed=True)
    acc, spec, p0, step = None, None, 0, min(PIECE_MIN, P)
    while p0 < P:
        n = min(step, P - p0)
        part = [_take_range(a, d, p0, p0 + n) for a, d in zip(args, dims)]
        leaves = []
        spec = tf._flatten(local(*part), leaves)
        sums = [t._data.sum(axis=0) for t in leaves]
        acc = sums if acc is None else [s0 + s for s0, s in zip(acc, sums)]
        if p0 == 0:
            per_point = max(1, sum(t._data.nbytes for t in leaves) // max(n, 1))
            step = int(min(max(PIECE_BYTES // per_point, PIECE_MIN), PIECE_MAX))
        p0 += n
    out = [_wrap(np.asarray(s / P if reduce == "mean" else s, t._data.dtype), t._dtype)
           for s, t in zip(acc, leaves)]
    return tf._unflatten(spec, out)


def _sum_tree(tf, res, reduce):
    leaves = []
    spec = tf._flatten(res, leaves)
    out = []
    for t in leaves:
        s = t._data.sum(axis=0)
        out.append(_wrap(np.asarray(s / t._data.shape[0] if reduce == "mean" else s,
                                    t._data.dtype), t._dtype))
    return tf._unflatten(spec, out)

