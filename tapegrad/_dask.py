"""``tapegrad.func.vmap`` over Dask arrays: lazy results, one recorded program per worker.

``vmap(grad_and_value(f))(X)`` with ``X`` a ``dask.array.Array`` (any batched argument a Dask
array) returns the local call's result tree with Dask arrays in place of tensors, chunked like
``X`` along the batch axis. What happens:

1. On the client, the first point of every batched argument is computed and the local vmap
   runs on it: that records ``f`` (the tape, its guards, the branch variants met so far) in
   the transform's own cache, exactly as a local call does, and gives the outputs' shapes and
   dtypes.
2. The function and those recordings are pickled once (``_dumps``: cloudpickle, with
   tapegrad's transform wrappers and recording caches reduced to what rebuilds them) into a
   ``_Program``, whose pickled form is ``(_load, (token, blob))``. The program is ONE key of
   the graph, a dependency of every chunk task: a distributed worker receives it once
   (from the scheduler or from a peer that holds it) and keeps it in memory for all its
   chunks; ``_load`` also keeps it per process by its token, so a process that receives it
   again (the multiprocessing scheduler sends dependencies with each task) unpickles nothing
   again. ``stats()`` counts arrivals and loads per process.
3. Each chunk task (``_chunk``) checks its blocks' shapes and dtypes, wraps them as tensors
   and calls the local batched vmap on them, which replays the shipped tape compiled and
   batched; points whose recorded branch decisions fail are recorded again on the worker (the
   local path's variants), so the answers are those of a local call, bit for bit.
4. ``reduce="sum"`` / ``"mean"``: each chunk returns its sums (the local ``reduce`` path,
   itself in pieces) and Dask adds the chunks' sums in a tree.

Nothing in ``tapegrad`` imports this module unless a vmap receives a Dask array.
"""
import hashlib
import io
import operator
import pickle
import threading
import time
import types

import numpy as np

from .creation import _BY_NP, from_numpy
from .tensor import GUARD, Tensor

_KEEP = 16                  # programs kept per process (by token), least recently used out
_LOADED = {}
_STATS = {"arrivals": 0, "loads": 0, "chunks": 0, "seconds": 0.0, "cpu": 0.0}
_lock = threading.Lock()


def stats():
    """This process's counts: ``arrivals`` (programs unpickled), ``loads`` (first arrivals of
    a program, the ones that build it), ``chunks`` run, and in them ``seconds`` (wall) and
    ``cpu`` (the calling thread's CPU time: all of it with one Numba thread) spent in the local
    vmap, ``recordings`` made here after the client's (guard failures on this process's
    chunks), ``bytes`` of the programs held."""
    with _lock:
        out = dict(_STATS)
        progs = list(_LOADED.values())
    out["recordings"] = sum(p.recorded_here() for p in progs)
    out["bytes"] = sum(len(p.blob) for p in progs)
    return out


def _reset_stats():
    with _lock:
        for k in _STATS:
            _STATS[k] = 0 * _STATS[k]


# ----------------------------------------------------------------------------- pickling
def _cache_from(cls, f, tapes, recordings):
    c = cls(f)
    c.tapes = tapes
    c.recordings = recordings
    return c


def _transform_from(make, f, argnums, has_aux, cache):
    w = make(f, argnums, has_aux)
    w._cache.tapes.update(cache.tapes)
    w._cache.recordings = cache.recordings
    return w


def _dumps(obj, tf):
    """cloudpickle ``obj``; a recording cache (``tf._Cache``) travels as its function and its
    tapes (not its weak references, fast calls and per-thread stores), a grad / grad_and_value
    wrapper as the transform and arguments that make it again, plus its cache. ``tf`` is
    ``tapegrad.func`` (pickled by reference, like everything of tapegrad's)."""
    import cloudpickle      # deferred: Dask's dependency, present wherever this module runs

    class Pickler(cloudpickle.Pickler):
        def reducer_override(self, o):
            if type(o) is tf._Cache:
                return _cache_from, (tf._Cache, o.f, {k: list(v) for k, v in o.tapes.items()},
                                     o.recordings)
            if isinstance(o, types.FunctionType):
                tr = o.__dict__.get("_tg_transform")
                if tr is not None and tr[0] in ("grad", "grad_and_value") \
                        and type(o.__dict__.get("_cache")) is tf._Cache:
                    return _transform_from, (getattr(tf, tr[0]),) + tuple(tr[1:]) + (o._cache,)
            return super().reducer_override(o)
    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


class _Program:
    """The recorded function and what a chunk task needs to call it: one graph key. Its
    pickled form is ``(_load, (token, blob))``; the blob is unpickled on first use only (a
    scheduler that unpickles the graph never builds it)."""

    def __init__(self, token, blob, state=None, vm=None):
        self.token, self.blob = token, blob
        self._state, self._vm, self._base = state, vm, None
        if vm is not None:
            self._base = self._recordings(vm)
        self._mk = threading.Lock()
        self._run = threading.Lock()

    def __reduce__(self):
        return _load, (self.token, self.blob)

    def __sizeof__(self):                   # what Dask's memory accounting should count
        return object.__sizeof__(self) + len(self.blob)

    @staticmethod
    def _recordings(vm):
        n = vm._cache.recordings
        c = getattr(vm._tg_vmap[0], "_cache", None)
        if c is not None and c is not vm._cache:
            n += c.recordings
        return n

    def recorded_here(self):
        """Recordings made in this process after the client's (guard failures)."""
        return 0 if self._vm is None else self._recordings(self._vm) - self._base

    @property
    def state(self):
        if self._state is None:
            with self._mk:
                if self._state is None:
                    st = pickle.loads(self.blob)
                    with _lock:
                        _STATS["loads"] += 1
                    self._state = st
        return self._state

    @property
    def vm(self):
        """The local batched vmap of the function, with the client's recordings."""
        if self._vm is None:
            st = self.state
            with self._mk:
                if self._vm is None:
                    vm = st["tf"].vmap(st["func"], st["dims"], 0, progress=False,
                                       reduce=st["reduce"])
                    vm._cache.tapes.update(st["own"].tapes)
                    vm._cache.recordings = st["own"].recordings
                    self._base = self._recordings(vm)
                    self._vm = vm
        return self._vm

    def run(self, i, start, n, blocks):
        st = self.state
        where = "chunk %d (points %d to %d) of %s" % (i, start, start + n - 1, st["desc"])
        nb = len(st["metas"])
        bs = [np.asarray(b) for b in blocks[:nb]]
        for b, (shape, dt, arg) in zip(bs, st["metas"]):
            if b.shape != (n,) + shape:
                raise ValueError("tapegrad.func.vmap: %s: argument %d has a block of shape %s, "
                                 "expected %s" % (where, arg, b.shape, (n,) + shape))
            if b.dtype != dt:
                raise TypeError("tapegrad.func.vmap: %s: argument %d has a block of dtype %s, "
                                "expected %s" % (where, arg, b.dtype, dt))
        args = _fill(st["tf"], st["spec"], st["kinds"], bs, blocks[nb:])
        vm = self.vm
        try:
            with self._run:             # one chunk at a time per process (each on all cores)
                t, c = time.perf_counter(), time.thread_time()
                out = vm(*args)
                t, c = time.perf_counter() - t, time.thread_time() - c
        except Exception as e:
            raise _named(e, where) from e
        outs = []
        st["tf"]._flatten(out, outs)
        with _lock:
            _STATS["chunks"] += 1
            _STATS["seconds"] += t
            _STATS["cpu"] += c
        if st["reduce"] is not None:
            return tuple(t._data[None] for t in outs)
        return tuple(t._data for t in outs)


def _named(e, where):
    msg = "tapegrad.func.vmap: %s: %s" % (where, e)
    try:
        err = type(e)(msg)
    except Exception:
        err = RuntimeError(msg)
    return err


def _load(token, blob):
    """Unpickling a program: the one this process already holds, else a new one (whose blob is
    unpickled when a chunk first needs it)."""
    with _lock:
        _STATS["arrivals"] += 1
        prog = _LOADED.pop(token, None)
        if prog is None:
            prog = _Program(token, blob)
        _LOADED[token] = prog               # most recently used last
        while len(_LOADED) > _KEEP:
            del _LOADED[next(iter(_LOADED))]
    return prog


def _chunk(prog, i, start, n, *blocks):
    return prog.run(i, start, n, blocks)


# ----------------------------------------------------------------------------- the graph
def _is_dask(x):
    return type(x).__module__.startswith("dask")


def vmap(tf, func, in_dims, out_dims, progress, reduce, args, desc):
    """``tapegrad.func.vmap(func, in_dims, out_dims, progress=, reduce=)(*args)`` where some
    argument leaf is a Dask array: the result tree with Dask arrays as leaves. ``tf``: the
    ``tapegrad.func`` module; ``desc``: the vmap's name in messages."""
    import dask                          # deferred: Dask is an optional extra ("dask")
    import dask.array as da             # deferred: (the same)
    from dask._task_spec import DataNode, Task, TaskRef
    from dask.highlevelgraph import HighLevelGraph
    _flatten, _unflatten = tf._flatten, tf._unflatten

    if GUARD[0] is not None:            # inside a tapegrad.func recording (grad(f) of an f
        raise TypeError(                # whose body maps over a Dask array)
            "%s over Dask arrays cannot be recorded inside another transform (its results are "
            "Dask arrays, not tensors): for the gradient of a sum over a Dask batch, write "
            "vmap(grad_and_value(loss), in_dims=(None, 0), reduce='sum')(params, X) "
            "(docs/scaling.md)" % desc)
    if progress:
        raise ValueError(
            "%s over Dask arrays returns lazy Dask arrays: show the progress where they are "
            "computed, with Dask's own reports: `with dask.diagnostics.ProgressBar(): "
            "dask.compute(...)` on the local schedulers, `distributed.progress(client.persist"
            "(...))` on a cluster (docs/scaling.md)" % desc)
    dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
    if len(dims) != len(args):
        raise ValueError("vmap(%s, in_dims=%s, ...)(<inputs>): in_dims is not compatible with "
                         "the structure of `inputs`. in_dims has structure %s but inputs has "
                         "%d arguments" % (getattr(func, "__name__", "func"), in_dims, dims,
                                           len(args)))
    leaf_types = (Tensor, da.Array)
    owner = []
    for n, (a, d) in enumerate(zip(args, dims)):
        sub = []
        _flatten(a, sub, leaf_types)
        owner.extend([(n, d)] * len(sub))
    leaves = []
    spec = _flatten(tuple(args), leaves, leaf_types)
    # per leaf: batched (moved to axis 0), unbatched Dask (one block), or a static tensor
    batched, unbatched, kinds, metas, sizes = [], [], [], [], set()
    for x, (n, d) in zip(leaves, owner):
        if isinstance(x, da.Array) and x.dtype not in _BY_NP:
            raise TypeError("tapegrad.func.vmap: argument %d is a Dask array of dtype %s, which "
                            "has no tensor dtype" % (n, x.dtype))
        if d is None:
            if isinstance(x, da.Array):
                unbatched.append(x.rechunk(x.shape) if x.npartitions > 1 else x)
                kinds.append("u")
            else:
                kinds.append(("t", x))
            continue
        ndim = x.ndim
        if not -ndim <= d < max(ndim, 1):
            raise ValueError("vmap(%s, in_dims=%s, ...)(<inputs>): Got in_dim=%d for an input but "
                             "the input is of type %s. We cannot vmap over non-Tensor arguments "
                             "or dims out of range" % (getattr(func, "__name__", "func"), in_dims,
                                                       d, type(x)))
        if isinstance(x, Tensor):
            x = np.moveaxis(x._data, d, 0)
        elif d % ndim:
            x = da.moveaxis(x, d, 0)
        sizes.add(x.shape[0])
        batched.append(x)
        kinds.append("b")
        metas.append((tuple(x.shape[1:]), np.dtype(x.dtype), n))
    if len(sizes) != 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         "dimension, got sizes %s for the mapped dimension" % sorted(sizes))
    (P,) = sizes
    ref = next(x for x in batched if isinstance(x, da.Array)).chunks[0]
    if any(c != c for c in ref) or P != P:
        raise ValueError("tapegrad.func.vmap: the Dask array's chunk sizes along the batch axis "
                         "are unknown; call `.compute_chunk_sizes()` on it first")
    if P == 0:
        raise ValueError("tapegrad.func.vmap: a Dask batch of 0 points")
    for j, x in enumerate(batched):
        if not isinstance(x, da.Array):
            x = da.from_array(x, chunks=(ref,) + x.shape[1:])
        want = {k: -1 for k in range(1, x.ndim) if len(x.chunks[k]) > 1}
        if x.chunks[0] != ref:
            want[0] = ref
        batched[j] = x.rechunk(want) if want else x
    # 1. record on the client, on the first point (the recordings go to func's own cache)
    firsts = dask.compute(*[x[:1] for x in batched], *unbatched)
    vm = tf.vmap(func, tuple(0 if d is not None else None for d in dims), 0,
                    progress=False, reduce=reduce and "sum")    # (chunks return sums)
    example = _fill(tf, spec, kinds, firsts[:len(batched)], firsts[len(batched):])
    res = vm(*example)
    outs = []
    out_spec = _flatten(res, outs)
    if reduce is None:
        out_meta = [(tuple(t._data.shape[1:]), t._data.dtype) for t in outs]
    else:
        out_meta = [(tuple(t._data.shape), t._data.dtype) for t in outs]
    # 2. the program: pickled once, one graph key
    state = {"tf": tf, "func": func, "dims": tuple(0 if d is not None else None for d in dims),
             "reduce": reduce and "sum", "own": vm._cache, "spec": spec, "kinds": kinds,
             "metas": metas, "desc": desc}
    blob = _dumps(state, tf)
    token = hashlib.sha1(blob).hexdigest()
    with _lock:
        prog = _LOADED.get(token)
        if prog is None:
            prog = _LOADED[token] = _Program(token, blob, state, vm)
    # 3. the chunk tasks and the outputs
    deps = batched + unbatched
    name = "tapegrad-vmap-" + dask.base.tokenize(token, [x.name for x in deps])
    pkey = "tapegrad-program-" + token
    layer = {pkey: DataNode(pkey, prog)}
    urefs = [TaskRef((u.name,) + (0,) * u.ndim) for u in unbatched]
    start = 0
    for i, n in enumerate(ref):
        brefs = [TaskRef((x.name, i) + (0,) * (x.ndim - 1)) for x in batched]
        layer[(name, i)] = Task((name, i), _chunk, TaskRef(pkey), i, start, n, *brefs, *urefs)
        start += n
    g = HighLevelGraph.from_collections(name, layer, dependencies=deps)
    arrays = []
    for k, (shape, dt) in enumerate(out_meta):
        oname = "%s-out%d" % (name, k)
        tail = (0,) * len(shape)
        olayer = {(oname, i) + tail: Task((oname, i) + tail, operator.getitem,
                                          TaskRef((name, i)), k) for i in range(len(ref))}
        gk = HighLevelGraph({**g.layers, oname: olayer}, {**g.dependencies, oname: {name}})
        lead = ref if reduce is None else (1,) * len(ref)
        arr = da.Array(gk, oname, chunks=(tuple(lead),) + tuple((s,) for s in shape),
                       dtype=dt, meta=np.empty((0,) * (1 + len(shape)), dt))
        if reduce is not None:
            arr = arr.sum(axis=0, dtype=dt)
            if reduce == "mean":
                arr = (arr / P).astype(dt)
        arrays.append(arr)
    out = _unflatten(out_spec, arrays)
    if reduce is None:
        out = _move_out(out, out_dims, da)
    return out


def _fill(tf, spec, kinds, bs, us):
    """The argument tuple from its spec: batched and unbatched blocks, static tensors."""
    leaves, ib, iu = [], iter(bs), iter(us)
    for kind in kinds:
        if kind == "b":
            leaves.append(from_numpy(np.asarray(next(ib))))
        elif kind == "u":
            leaves.append(from_numpy(np.asarray(next(iu))))
        else:
            leaves.append(kind[1])
    return tf._unflatten(spec, leaves)


def _move_out(res, out_dims, da):
    if isinstance(res, da.Array):
        return res if out_dims in (0, None) else da.moveaxis(res, 0, out_dims)
    if isinstance(res, (tuple, list)):
        od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(res)
        return type(res)(_move_out(r, d, da) for r, d in zip(res, od))
    if isinstance(res, dict):
        return {k: _move_out(v, out_dims, da) for k, v in res.items()}
    return res
