"""The tape: a flat Wengert list in growable struct-of-arrays storage, and the backward driver.

A ``Tape`` holds, in ``array.array`` buffers that numpy views without copying:

* ``E``  entries, ``K`` int64 columns each (``kernels.OP ... FL``): opcode, grad_fn name id,
  output node, input nodes (-1 for an operand that needs no gradient), where the VJP's saved
  values are, two integer parameters, a constant index, flags;
* ``N``  nodes, ``NK`` columns each: offset and size in the adjoint store of its dtype, dtype
  (0 float32, 1 float64), producing entry (-1 for a leaf), output number;
* ``V``  per dtype, copies of small saved values and constants; large saved arrays are
  referenced instead (``XO`` keeps them alive, ``XA`` holds address/length pairs);
* ``I``  integer index maps (gather/segsum; ``IndexMaps``, one array per map), ``C`` float
  constants.

No Python object is created per entry. A backward pass is one call into the compiled
``_interp.reverse`` (it returns to Python only for custom Functions and errors).

Lifetime: tensors reference their tape; a tape dies with its last tensor. Leaf-only ops go
to the thread's *current* tape, which is rotated after a backward that consumes it and when
it grows past ``ROTATE_AT`` entries. When an op joins tensors of two tapes, the smaller tape
is appended to the larger (``absorb``) and tensors of the small one are re-pointed lazily.
"""
import ctypes
import struct
import sys
from bisect import bisect_right
import threading
import traceback
import types
import weakref
from array import array

import numpy as np

from .._compiled import _cache, _layout, _runs, _scatter, _vmath
from .. import _par
from .._state import ANOMALY, STATE, is_anomaly_check_nan_enabled
from ..ops import (BINARY, CAST, INDEX, MM, OFFSET_OPS, OPCODE, OPS, PYFUNC, SUM,
                  UNARY, broadcast1)
from . import pysweep
from .names import _CPP_NAMES, NAMES
from .._schema import (CI, F_BIG, F_FREED, F_HOOK, F_SAVES, FL, IA, IB, K, NDT, NK, NM, NNR,
                       NOFF, NPROD, NSIZE, OP, OUT, P0, P1, SA, SB, SY)

PYFUNC_OPCODE = OPCODE["pyfunc"]
BIG = 1 << 15          # nodes this big live in the "big" slots and their entries run on numpy
# Node slots: 0 float32 / 1 float64 small nodes (flat adjoint stores, the compiled sweep);
# 2 float32 / 3 float64 nodes of >= BIG elements (one array per node, numpy's SIMD ufuncs and
# BLAS; entries touching them carry F_BIG). The value dtype of a slot is ``slot & 1``.
ROTATE_AT = 1 << 10    # entries after which the current tape is retired for leaf-only ops
ROTATE_BYTES = 1 << 22  # ... or saved bytes: dropped graphs sharing it stay bounded (docs/design.md)
NP_DT = (np.float32, np.float64)
_NP_DTYPE = (np.dtype(np.float32), np.dtype(np.float64))
_TYPECODE = ("f", "d")
_PACK_E = struct.Struct("%dq" % K).pack
_PACK_N = struct.Struct("%dq" % NK).pack
_PACK_2 = struct.Struct("2q").pack


class IndexMaps:
    """The tape's integer index maps (gather / segsum / scatter maps, int64), kept as one
    array per map and joined into one flat array only when a compiled sweep needs it.

    One ``array.array`` appended to map by map copied the whole store on most appends once it
    held megabytes (its 1/16 over-allocation and glibc's realloc of heap blocks): an 80 KB map
    (a ``sum(dim)`` or ``permute`` of 10^4 elements) cost ~0.5 ms to record into a 16 MB store,
    against ~5 us into an empty one, and an eager program that records big views without a
    backward (GradBench's gmm objective) grows its tape's store to tens of MB. Here an append
    is one copy of the map; the join is one copy of the store per sweep of a grown tape.
    Offsets are in elements, as before (``len``)."""
    __slots__ = ("parts", "starts", "n", "flat")

    def __init__(self):
        self.parts = []             # int64 arrays, one per appended map (or one joined array)
        self.starts = []            # offset of each part
        self.n = 0                  # elements in all
        self.flat = None            # the joined array while nothing was appended since

    def __len__(self):
        return self.n

    def append(self, idx):
        """Append a map (anything ``np.asarray`` takes; copied); returns its offset."""
        a = np.array(idx, np.int64, copy=True).reshape(-1)
        off = self.n
        if len(a):
            self.parts.append(a)
            self.starts.append(off)
            self.n = off + len(a)
            self.flat = None
        return off

    def append_shared(self, a):
        """Append an int64 array that nobody writes to (a cached map): not copied."""
        off = self.n
        if len(a):
            self.parts.append(a)
            self.starts.append(off)
            self.n = off + len(a)
            self.flat = None
        return off

    def extend(self, other):
        for st, a in zip(other.starts, other.parts):
            self.parts.append(a)
            self.starts.append(self.n + st)
        self.n += other.n
        self.flat = None

    def array(self):
        """All maps as one writable int64 array (joined once per growth)."""
        f = self.flat
        if f is None:
            parts = self.parts
            if not parts:
                return _NO_INDEX
            if len(parts) == 1 and parts[0].flags.writeable:
                f = parts[0]
            else:
                f = np.concatenate(parts)
                self.parts, self.starts = [f], [0]
            self.flat = f
        return f

    def get(self, p0, n):
        """Elements ``p0 .. p0 + n`` (a map: a view of its part), or what the joined store
        holds there (rows that keep no map, ``copy``, read an empty or partial range)."""
        i = bisect_right(self.starts, p0) - 1
        if i >= 0:
            a = self.parts[i]
            lo = p0 - self.starts[i]
            if lo + n <= len(a):
                return a[lo:lo + n]
        return self.array()[p0:p0 + n]


_NO_INDEX = np.zeros(0, np.int64)


def address(a, _cf=ctypes.c_char.from_buffer, _ad=ctypes.addressof):
    """Data address of an ndarray: through the buffer protocol (~0.5 us), 4x cheaper than
    ``__array_interface__`` (which builds a dict); read-only or empty arrays take the slow way."""
    try:
        return _ad(_cf(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]

# Counts in-place modifications anywhere; a tape whose saved values were all recorded after
# the last in-place op can skip the version check at backward.
INPLACE = [0]


def view_i64(buf):
    return np.frombuffer(buf, dtype=np.int64) if len(buf) else np.zeros(0, np.int64)


def view_f(buf, dt):
    return np.frombuffer(buf, dtype=NP_DT[dt]) if len(buf) else np.zeros(1, NP_DT[dt])


def entry_name(tp, e):
    return NAMES[int(view_i64(tp.E)[e * K + NM])]


_Q, _F, _D = array("q"), array("f"), array("d")


class Tape:
    __slots__ = ("E", "N", "V", "XO", "XA", "I", "C", "asz", "wself", "leaf_pairs",
                 "pyfuncs", "sv", "mark", "nbytes", "retained", "hooks",
                 "views", "into", "dn", "de", "n_saving", "released", "crefs", "held",
                 "carried", "wtape", "watched", "dead", "dead_bytes", "live", "stubs", "rot",
                 "__weakref__")

    def __init__(self):
        # (copies of empty templates: ~3x cheaper than array(typecode), and a tape is made
        # per training step / per HVP)
        self.E = _Q.__copy__()
        self.N = _Q.__copy__()
        self.V = [_F.__copy__(), _D.__copy__()]
        self.XO = [[], []]
        self.XA = [_Q.__copy__(), _Q.__copy__()]
        self.I = IndexMaps()
        self.C = _D.__copy__()
        self.asz = [0, 0, 0, 0]     # node space per slot
        self.wself = weakref.ref(self)  # leaves remember (tape.wself, node): see leaf_node
        self.leaf_pairs = []        # [(node, weakref to leaf)]: AccumulateGrad targets
        self.pyfuncs = []           # custom Function records (see autograd.function)
        self.sv = []                # version records: (counter, version, entry, shape, which)
        self.nbytes = 0             # bytes of saved values (copied or referenced)
        self.retained = []          # weakrefs of non-leaf tensors that called retain_grad()
        self.hooks = {}             # ("t", node) / ("pre", entry) / ("post", entry) -> {id: hook}
        self.mark = None            # INPLACE count when the first version record was made
        self.views = {}             # entry -> grad_fn Node view (identity-stable)
        self.into = None            # set when absorbed into another tape
        self.dn = self.de = 0       # node / entry shift applied by that absorb
        self.n_saving = 0           # entries with saved values not yet freed
        self.released = False
        self.crefs = None           # recording(): [(dtype slot, save code, Tensor)] constants
        self.held = None            # recording(): leaves held until the recording is frozen
        self.carried = None         # (leaf rows, asz after them) when made by _carry_leaves
        self.wtape = None           # liveness (``watch``): a weakref to this tape, made on demand
        self.watched = None         # {id: _Watch} weakrefs of large results recorded here
        self.dead = None            # nodes whose watched result died (not yet collected)
        self.dead_bytes = 0         # bytes of those results that nothing consumed
        self.live = []              # weakrefs of the tensors recorded here (``register``)
        self.stubs = None           # weakrefs of the tapes absorbed into this one
        self.rot = None             # (entries * K, saved bytes) it rotates at, when resumed

    # ----------------------------------------------------------------- recording
    def __len__(self):
        return len(self.E) // K

    def node(self, size, dt, prod, nr=0):
        """A new node of ``size`` elements of dtype slot ``dt`` (0/1; big nodes go to 2/3)."""
        n = len(self.N) // NK
        slot = dt + 2 if size >= BIG else dt
        self.N.frombytes(_PACK_N(self.asz[slot], size, slot, prod, nr))
        self.asz[slot] += size
        return n

    def is_big(self, node):
        return node >= 0 and self.N[node * NK + NDT] >= 2

    def leaf_node(self, t):
        """The node of leaf tensor ``t`` on this tape (made on first use). The leaf remembers
        it as ``(tape.wself, node)``; the tape holds the leaf weakly, so a dropped leaf is
        freed at once and needs no gradient."""
        lr = t._lref
        if lr is not None and lr[0] is self.wself:
            return lr[1]
        n = len(self.N) // NK            # Tape.node, inlined
        size = t._data.size
        slot = t._dtype.slot
        if size >= BIG:
            slot += 2
        asz = self.asz
        self.N.frombytes(_PACK_N(asz[slot], size, slot, -1, 0))
        asz[slot] += size
        self.leaf_pairs.append((n, weakref.ref(t)))
        if self.held is not None:
            self.held.append(t)
        t._lref = (self.wself, n)
        return n

    def save(self, value, dt, owned_elsewhere=False):
        """Keep a value the VJP (or a replay) needs; returns its code for SA/SB/SY.

        Arrays are referenced, as torch saves tensors (the version check catches in-place
        changes; changes made through ``.data`` are seen, as in torch); a broadcast or
        non-contiguous operand is copied. Numpy scalars (0-dim results, immutable) and
        Python numbers are copied into V. ``owned_elsewhere``: a leaf's own array (alive
        anyway), not counted towards the current tape's rotation budget."""
        if type(value) is not np.ndarray:          # numpy scalar / python number
            V = self.V[dt]
            V.append(value)
            self.nbytes += 8
            return len(V) - 1
        if value.dtype is not _NP_DTYPE[dt] or not value.flags.c_contiguous:
            if value.dtype != NP_DT[dt]:
                value = np.ascontiguousarray(value, NP_DT[dt])
            elif not value.flags.c_contiguous:
                value = _layout.contiguous(value)
        XO = self.XO[dt]
        XO.append(value)
        self.XA[dt].frombytes(_PACK_2(address(value), value.size))
        if not owned_elsewhere:
            self.nbytes += value.nbytes
        return -1 - len(XO)

    def version_record(self, e, t, which):
        """Remember the version of a saved tensor; backward refuses to use it if it changed."""
        if self.mark is None:
            self.mark = INPLACE[0]
        vc = t._vc
        if vc is None:
            vc = t._vc = [0]
        self.sv.append((vc, vc[0], e, t._data.shape, which))

    def entry(self, op, nm, out_size, dt, a, b, sa=-1, sb=-1, sy=-1, p0=0, p1=0, ci=-1, fl=0):
        """Append an entry and its output node; returns (entry index, output node)."""
        e = len(self.E) // K
        n = len(self.N) // NK
        asz = self.asz
        slot = dt
        Nb = self.N
        if out_size >= BIG:
            slot = dt + 2
            fl |= F_BIG
        elif (a >= 0 and Nb[a * NK + NDT] >= 2) or (b >= 0 and Nb[b * NK + NDT] >= 2):
            fl |= F_BIG                 # an operand is a big node (is_big, inlined)
        Nb.frombytes(_PACK_N(asz[slot], out_size, slot, e, 0))
        asz[slot] += out_size
        self.E.frombytes(_PACK_E(op, nm, n, a, b, sa, sb, sy, p0, p1, ci, fl))
        if fl & F_SAVES:
            self.n_saving += 1
        return e, n

    def const(self, c):
        self.C.append(c)
        return len(self.C) - 1

    def index(self, idx):
        return self.I.append(idx)

    # ----------------------------------------------------------------- merging
    def absorb(self, other):
        """Append ``other`` (all of it) to this tape; ``other`` then forwards to ``self``."""
        dn, de = len(self.N) // NK, len(self.E) // K
        dv = [len(self.V[0]), len(self.V[1])]
        dx = [len(self.XO[0]), len(self.XO[1])]
        da = list(self.asz)
        di, dc, dp = len(self.I), len(self.C), len(self.pyfuncs)
        if len(other.N) and len(other.E) <= _SMALL_ABSORB * K:
            # a few entries (the leaf-only op recorded on a fresh current tape, then met by
            # a graph of the old one): the renumbering in Python, without the compiled
            # call's array set-up (a 1-entry merge: ~24 -> ~17 us); tests/test_tape_join.py
            # checks it against the compiled shift
            N, E = other.N.tolist(), other.E.tolist()
            pt = _p0_shift()
            for r in range(0, len(E), K):
                vd = N[E[r + OUT] * NK + NDT] & 1
                for col in (OUT, IA, IB):
                    if E[r + col] >= 0:
                        E[r + col] += dn
                for col in (SA, SB, SY):
                    v = E[r + col]
                    if v >= 0:
                        E[r + col] = v + dv[vd]
                    elif v <= -2:
                        E[r + col] = v - dx[vd]
                if E[r + CI] >= 0:
                    E[r + CI] += dc
                op = E[r + OP]
                E[r + P0] += int(pt[op, 0]) * di + int(pt[op, 1]) * dp
            for r in range(0, len(N), NK):
                N[r + NOFF] += da[N[r + NDT]]
                if N[r + NPROD] >= 0:
                    N[r + NPROD] += de
            self.N.extend(N)
            self.E.extend(E)
        elif len(other.N):
            N = view_i64(other.N).reshape(-1, NK).copy()
            E = view_i64(other.E).reshape(-1, K).copy()
            _shift_rows()(E, N, dn, de, np.array(dv, np.int64), np.array(dx, np.int64),
                          np.array(da, np.int64), dc, _p0_shift() @ np.array([di, dp], np.int64))
            self.N.frombytes(N.tobytes())
            self.E.frombytes(E.tobytes())
        for d in (0, 1):
            self.V[d].extend(other.V[d])
            self.XO[d].extend(other.XO[d])
            self.XA[d].extend(other.XA[d])
        for d in range(4):
            self.asz[d] += other.asz[d]
        self.I.extend(other.I)
        self.C.extend(other.C)
        self.leaf_pairs += [(node + dn, ref) for node, ref in other.leaf_pairs]
        self.retained += other.retained
        self.nbytes += other.nbytes
        for (kind, k), hs in other.hooks.items():
            self.hooks[(kind, k + (dn if kind == "t" else de))] = hs
        if other.pyfuncs:
            wr = weakref.ref(self)
            for rec in other.pyfuncs:
                rec.shift(dn)
                rec.wtape = wr
                self.pyfuncs.append(rec)
        if other.sv:
            if self.mark is None or (other.mark is not None and other.mark < self.mark):
                self.mark = other.mark
            self.sv += [(vc, v, e + de, sh, w if type(w) is str or w[0] != "i" or w[1] < 0
                         else ("i", w[1] + dn)) for vc, v, e, sh, w in other.sv]
        for e, v in other.views.items():
            v._tape, v._entry = self, e + de
            self.views[e + de] = v
        self.n_saving += other.n_saving
        if other.watched:
            if self.wtape is None:
                self.wtape = weakref.ref(self)
            ws = self.watched if self.watched is not None else {}
            for k, w in other.watched.items():
                w.node += dn
                w.tp = self.wtape
                ws[k] = w
            self.watched = ws
        if other.dead:
            self.dead = (self.dead or []) + [n + dn for n in other.dead]
            self.dead_bytes += other.dead_bytes
        other.watched = other.dead = None
        # liveness: the tensors of ``other`` (they name ``other`` until resolved) and ``other``
        # itself, whose ``into`` refers to this tape (``_live_nodes`` counts both)
        if other.live:
            self.live += other.live
        stubs = self.stubs if self.stubs is not None else []
        if other.stubs:
            stubs += other.stubs
        stubs.append(weakref.ref(other))
        self.stubs = stubs
        other.live, other.stubs = [], None
        other.into, other.dn, other.de = self, dn, de
        # the forwarding stub keeps nothing alive but the link
        other.E = other.N = other.I = other.C = None
        other.V = other.XO = other.XA = None
        other.leaf_pairs, other.pyfuncs, other.views = [], [], {}
        other.retained = []
        other.hooks = {}
        other.sv = []


class _Stale:
    """The ``_tape`` of a view whose root was written in place with gradients since the view
    was made (``tensor._rederive_views``): its ``into`` routes every use through ``resolve``,
    which records the view's node from the root's new one then (``REDERIVE``), as torch
    regenerates a view's grad_fn when it is next used."""
    __slots__ = ()
    into = True


STALE = _Stale()
REDERIVE = [None]       # tensor._rederive


def resolve(t):
    """(tape, node) of a non-leaf tensor, following absorbs."""
    tp = t._tape
    if tp.into is not None:
        if tp is STALE:
            return REDERIVE[0](t)
        node = t._node
        while tp.into is not None:
            node += tp.dn
            tp = tp.into
        t._tape, t._node = tp, node
    return tp, t._node


def resolve_entry(tp, e):
    while tp.into is not None:
        e += tp.de
        tp = tp.into
    return tp, e


# --------------------------------------------------------------------- current tape
_tls = threading.local()


_P0_SHIFT = []
_SMALL_ABSORB = 8      # tapes of at most this many entries are renumbered in Python (absorb)


def _p0_shift():
    """(n_ops, 2) 0/1 table: whether an opcode's P0 holds an offset into the index store
    (index rows but slice/embed/transpose, which hold element offsets) or a custom Function's
    number; a merge shifts P0 by table @ (index shift, Function shift). Built once."""
    if not _P0_SHIFT:
        t = np.zeros((len(OPS), 2), np.int64)
        for i, o in enumerate(OPS):
            t[i, 0] = o.kind == INDEX and i not in OFFSET_OPS
        t[OPCODE["pyfunc"], 1] = 1
        _P0_SHIFT.append(t)
    return _P0_SHIFT[0]


_SHIFT = []


def _shift_rows():
    """The compiled renumbering of a tape's entry and node rows appended after another
    tape's: node numbers +dn, producers +de, saved-value slots +dv (V) / -dx (XO refs),
    store offsets +da per slot, constants +dc, P0 by the opcode's shift (``_p0_shift``).
    One call instead of a dozen numpy passes (a merge costs ~20 us instead of ~160). The
    numpy passes while the compiled code is not in use (``_compiled._cache``)."""
    if not _cache.ON:
        return _shift_np
    if not _SHIFT:
        from numba import njit

        @njit(cache=True, nogil=True, no_cfunc_wrapper=True)
        def shift(E, N, dn, de, dv, dx, da, dc, p0):
            for r in range(N.shape[0]):
                N[r, NOFF] += da[N[r, NDT]]
                if N[r, NPROD] >= 0:
                    N[r, NPROD] += de
            for r in range(E.shape[0]):
                vd = N[E[r, OUT], NDT] & 1
                for col in (OUT, IA, IB):
                    if E[r, col] >= 0:
                        E[r, col] += dn
                for col in (SA, SB, SY):
                    v = E[r, col]
                    if v >= 0:
                        E[r, col] = v + dv[vd]
                    elif v <= -2:
                        E[r, col] = v - dx[vd]
                if E[r, CI] >= 0:
                    E[r, CI] += dc
                E[r, P0] += p0[E[r, OP]]
        _SHIFT.append(shift)
    return _SHIFT[0]


def _shift_np(E, N, dn, de, dv, dx, da, dc, p0):
    """``_shift_rows``' renumbering with numpy passes (the same result)."""
    vd = N[E[:, OUT], NDT] & 1          # (read before N's rows change: NDT does not)
    N[:, NOFF] += da[N[:, NDT]]
    N[:, NPROD] += np.where(N[:, NPROD] >= 0, de, 0)
    for col in (OUT, IA, IB):
        E[:, col] += np.where(E[:, col] >= 0, dn, 0)
    for col in (SA, SB, SY):
        v = E[:, col]
        E[:, col] = np.where(v >= 0, v + dv[vd], np.where(v <= -2, v - dx[vd], v))
    E[:, CI] += np.where(E[:, CI] >= 0, dc, 0)
    E[:, P0] += p0[E[:, OP]]


def current_tape():
    tp = getattr(_tls, "tape", None)
    if (tp is None or tp.into is not None or tp.released or len(tp.E) >= ROTATE_AT * K
            or tp.nbytes >= ROTATE_BYTES):
        if tp is not None and tp.crefs is not None and tp.into is None and not tp.released:
            # a recording (tapegrad.func) never rotates for size: its inputs' leaves must keep
            # one node each (a rotated recording gave a leaf a second node on another tape,
            # which the frozen tape then read unproduced: zero gradients from 2^18 elements)
            return tp
        if tp is not None and not tp.released:
            r = tp.rot
            if tp.into is None:
                if r is not None and len(tp.E) < r[0] and tp.nbytes < r[1]:
                    return tp                 # resumed (below), within its new budget
            else:
                # the current tape was absorbed: the leaf-only ops recorded there joined a
                # graph of another tape. Resume that tape (with another rotation budget)
                # rather than a fresh tape per leaf-only op, each absorbed at its next op
                # (GradBench's lstm: 759 absorbs in 9,145 entries once the graph passed
                # ROTATE_AT). A fresh tape's dropped graphs are not absorbed: they rotate.
                big = tp.into
                while big.into is not None:
                    big = big.into
                if not big.released and big.crefs is None:
                    big.rot = (len(big.E) + ROTATE_AT * K, big.nbytes + ROTATE_BYTES)
                    _tls.tape = big
                    return big
        tp = _tls.tape = Tape()
        old = _tls.__dict__.pop("consumed", None)
        if old is not None:
            _carry_leaves(tp, old)
    return tp


def _carry_leaves(tp, old):
    """Register on the fresh current tape ``tp`` the live leaves of ``old``, the current tape
    a backward just consumed: a training loop records the same parameters every step, and
    one pass here (a tuple per leaf) is cheaper than ``leaf_node`` on each one's first use
    (337 parameters of the scalar MLP: ~330 -> ~80 us a step). A leaf whose latest node is
    elsewhere (used on another tape since) is left to ``leaf_node``."""
    if old.into is not None:
        return
    pairs = old.leaf_pairs
    if old.carried is not None and old.carried[0] == len(pairs):
        # ``old`` was itself carried and registered no leaf since: its leaf rows are exactly
        # rows 0..k-1, so hand over those rows and the identity token, and every leaf keeps
        # its (token, node) untouched; ``old`` gets a fresh token (its leaves re-register
        # there if it records again)
        k, asz = old.carried
        tp.N = old.N[:k * NK]
        tp.asz = list(asz)
        tp.leaf_pairs = list(pairs)
        tp.wself, old.wself = old.wself, object()
        tp.carried = old.carried
        return
    wold, wself = old.wself, tp.wself
    asz = tp.asz
    rows = []
    pairs = tp.leaf_pairs
    k = 0
    for _, ref in old.leaf_pairs:
        t = ref()
        if t is None:
            continue
        lr = t._lref
        if lr is None or lr[0] is not wold:
            continue
        size = t._data.size
        slot = t._dtype.slot
        if size >= BIG:
            slot += 2
        rows.append(_PACK_N(asz[slot], size, slot, -1, 0))
        asz[slot] += size
        pairs.append((k, ref))
        t._lref = (wself, k)
        k += 1
    tp.N.frombytes(b"".join(rows))
    tp.carried = (k, tuple(asz))


class recording:
    """``with recording() as tp:`` records leaf-only ops on a fresh tape ``tp`` that no other
    graph shares (the replay API builds on it); the previous current tape is restored after."""

    def __enter__(self):
        self._prev = getattr(_tls, "tape", None)
        self.tape = _tls.tape = Tape()
        self.tape.crefs = []        # which saved constants are tensors (a replay re-reads them)
        self.tape.held = []         # leaves made inside the function: their values are needed
        return self.tape

    def __exit__(self, *exc):
        _tls.tape = self._prev
        return False


def retire(tp):
    """A backward consumed this tape: new leaf-only ops start a fresh one."""
    if getattr(_tls, "tape", None) is tp and tp.crefs is None:    # (a recording stays current)
        _tls.tape = None


def join(tapes):
    """Merge several tapes into the largest; returns it."""
    big = max(tapes, key=len)
    for t in tapes:
        if t is not big and t.into is None:
            big.absorb(t)
    return big


# --------------------------------------------------------------------- backward driver
_DUMMY = (np.zeros(1, np.float32), np.zeros(1, np.float64))

MSG_FREED = ("Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the graph "
             "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
             "you need to backward through the graph a second time or if you need to access saved "
             "tensors after calling backward.")


_NOBAD = [np.zeros(1024, np.uint8)]


# stand-ins for empty buffers in store_views (shared: nothing writes them, and they stay
# writable so the compiled sweeps see the argument types they were compiled for)
_NONE_I64 = np.zeros(0, np.int64)
_NONE_F = (np.zeros(1, np.float32), np.zeros(1, np.float64))


def store_views(tp):
    """numpy views (no copies) of the tape's buffers, in the interpreter's argument order.
    They pin the array.array buffers: callers must drop them (``del``) before the tape grows."""
    fb, i64 = np.frombuffer, np.int64
    V, XA, I, C = tp.V, tp.XA, tp.I, tp.C
    return (fb(tp.E, i64), fb(tp.N, i64),
            fb(V[0], np.float32) if len(V[0]) else _NONE_F[0],
            fb(V[1], np.float64) if len(V[1]) else _NONE_F[1],
            fb(XA[0], i64) if len(XA[0]) else _NONE_I64, fb(XA[1], i64) if len(XA[1]) else _NONE_I64,
            I.array(), fb(C, np.float64) if len(C) else _NONE_F[1])


def version_mask(tp, ne):
    """Entries with a saved tensor modified in place since it was saved (a shared all-zero
    array when no in-place operation happened since the tape's first record). A custom
    Function's saved tensors (records whose ``which`` is a tuple) are checked when its
    backward unpacks them (``ctx.saved_tensors``), as torch does, not here."""
    if tp.sv and tp.mark != INPLACE[0]:
        bad = np.zeros(max(ne, 1), np.uint8)
        for vc, v, e, _, w in tp.sv:
            if vc[0] != v and type(w) is str:
                bad[e] = 1
        return bad
    if _NOBAD[0].size < ne:
        _NOBAD[0] = np.zeros(2 * ne, np.uint8)
    return _NOBAD[0]


def _version_error(tp, e):
    for rec in tp.sv:
        if rec[2] == e and rec[0][0] != rec[1] and type(rec[4]) is str:
            return RuntimeError(version_message(tp, rec))
    return RuntimeError("one of the variables needed for gradient computation has been modified "
                        "by an inplace operation")


def version_message(tp, rec):
    """torch's message for the version record ``rec`` = (counter, version, entry, shape,
    which) of tape ``tp`` whose tensor was modified in place. ``which``: "a" / "b" (an
    operand's saved value), "y" (the output's), or for a custom Function's saved tensor a
    tuple: ("o", k) output k of the Function, ("i", node) an input on that node (-1: a
    constant), ("x",) a tensor made inside its forward."""
    vc, ver, e, shape_, which = rec
    Nb = tp.N
    if which == "y" or which[0] == "o":
        src = ", which is output %d of %s," % (0 if which == "y" else which[1],
                                               _short(entry_name(tp, e)))
    elif which[0] == "x":
        src = ""
    else:
        # torch names the saved tensor's grad_fn now: a view's is regenerated
        # (AsStrided), a tensor written in place with grads has the writer's
        if type(which) is str:
            node = int(tp.E[e * K + (IA if which == "a" else IB)])
        else:
            node = which[1]
        prod = int(Nb[node * NK + NPROD]) if node >= 0 else -1
        name = entry_name(tp, prod) if prod >= 0 else None
        if name is not None and _short(name) in _VIEW_OPS:
            name = "AsStridedBackward0"
        elif name is not None and len(vc) > 1:
            name = vc[1]
        src = (", which is output %d of %s," % (int(Nb[node * NK + NNR]), _short(name))
               if name is not None else "")
    shape = "[" + ", ".join(str(s) for s in shape_) + "]"
    ttype = "torch.FloatTensor" if int(Nb[int(tp.E[e * K + OUT]) * NK + NDT]) & 1 == 0 \
        else "torch.DoubleTensor"
    return ("one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [%s %s]%s is at version %d; expected version %d instead. "
            "Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
            % (ttype, shape, src, vc[0], ver))


# grad_fn names (shortened) of entries whose output is a view of their input
_VIEW_OPS = {"Select", "Slice", "View", "AsStrided", "Alias", "Unsqueeze", "Squeeze", "T",
             "Transpose", "Permute", "Expand", "Diagonal", "Unbind", "Split", "SplitWithSizes",
             "ReshapeAlias", "Narrow", "Unfold", "Unflatten"}


def _short(name):
    """torch names the op, not the node, in this message: ExpBackward0 -> Exp (C++ nodes by
    their qualified name: torch::autograd::CopySlices)."""
    name = _CPP_NAMES.get(name, name)
    for suffix in ("Backward0", "Backward1", "Backward2", "Backward"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


class Adjoints:
    """Cotangents during a reverse sweep: small nodes in flat zeroed stores (what the compiled
    sweep updates), big nodes one array each, made by their first contribution (no zeroing,
    no copy) and updated in place after that (copy-on-write for arrays shared with a caller)."""
    __slots__ = ("A", "G", "owned")

    def __init__(self, tp):
        self.A = [np.zeros(tp.asz[0], np.float32) if tp.asz[0] else _DUMMY[0],
                  np.zeros(tp.asz[1], np.float64) if tp.asz[1] else _DUMMY[1]]
        self.G = {}
        self.owned = set()

    def get(self, N, node):
        """The node's cotangent as a flat array (zeros when nothing reached it)."""
        off, size, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
        if slot < 2:
            return self.A[slot][off:off + size]
        g = self.G.get(node)
        if g is None:
            g = np.zeros(size, NP_DT[slot & 1])
            prod = int(N[node * NK + NPROD])
            k = node + 1               # unbind: the parts are alias nodes right after it
            while k * NK < len(N) and int(N[k * NK + NPROD]) == prod and prod >= 0:
                part = self.G.get(k)
                if part is not None:
                    o = int(N[k * NK + NOFF]) - off
                    g[o:o + part.size] += part
                k += 1
        return g

    def writable(self, N, node):
        """The node's cotangent as a flat array the caller may add into in place (a big
        node's is made, zeroed, or copied when shared with a caller)."""
        off, size, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
        if slot < 2:
            return self.A[slot][off:off + size]
        g = self.G.get(node)
        if g is None or node not in self.owned or not g.flags.writeable:
            g = self.get(N, node) if g is None else g.copy()     # get: fresh zeros
            self.G[node] = g
            self.owned.add(node)
        return g

    def inplace(self, N, node):
        """A big node's cotangent array when a contribution may be added into it in place
        (owned, writable, contiguous, full-size: a GEMM's beta = 1, a transpose's add), else
        None (nothing there yet, a small node, or an array shared with a caller)."""
        g = self.G.get(node)
        if (g is None or node not in self.owned or not g.flags.writeable
                or not g.flags.c_contiguous or int(N[node * NK + NDT]) < 2):
            return None
        return g

    def set(self, N, node, value):
        """Replace a node's cotangent (a hook returned a new gradient)."""
        off, size, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
        value = np.asarray(value, NP_DT[slot & 1]).reshape(-1)
        if slot < 2:
            self.A[slot][off:off + size] = value
        else:
            self.G[node] = value.copy()
            self.owned.add(node)

    def take(self, N, node):
        """The node's cotangent as an array the caller may keep (a leaf's new .grad): owned
        arrays are handed over, shared or read-only ones copied."""
        g = self.get(N, node)
        if int(N[node * NK + NDT]) < 2 or node not in self.owned or not g.flags.writeable:
            g = g.copy()
        self.owned.discard(node)
        return g

    def acc(self, N, node, c, fresh):
        """Add contribution ``c`` (an array, broadcast to the node or summed into a single
        element) to the node's cotangent; ``fresh``: c may be kept and modified."""
        off, size, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
        if slot < 2:
            if size == 1 and np.size(c) != 1:
                self.A[slot][off] += np.sum(c, dtype=self.A[slot].dtype)
            else:
                self.A[slot][off:off + size] += c
            return
        c = np.asarray(c).reshape(-1)
        if size == 1 and c.size != 1:          # a single-element operand broadcast (stride 0)
            c, fresh = np.array([c.sum(dtype=NP_DT[slot & 1])]), True
        if c.dtype != NP_DT[slot & 1]:
            c, fresh = c.astype(NP_DT[slot & 1]), True
        cur = self.G.get(node)
        if cur is None:
            if c.size != size:
                c, fresh = np.broadcast_to(c, (size,)).copy(), True
            self.G[node] = c
            if fresh:
                self.owned.add(node)
        elif cur.size >= _vmath.PAR and _vmath.OK:      # the sum on every core
            # a broadcast (sum's VJP: stride 0) goes in as the kernel's single element
            if c.strides[0] == 0:
                c = c[:1]
            if node in self.owned:
                _vmath.binary_fwd("add", cur, c, cur)
            elif cur.strides[0] == 0 and c.size == 1:     # two broadcasts: still one
                self.G[node] = broadcast1(cur[:1] + c, size)
            else:
                self.G[node] = _vmath.binary_fwd("add", cur[:1] if cur.strides[0] == 0 else cur,
                                                 c, np.empty(cur.size, cur.dtype))
                self.owned.add(node)
        elif node in self.owned:
            cur += c
        else:
            self.G[node] = cur + c
            self.owned.add(node)


_SWEEP_MODS = None
_count_nonzero = np.count_nonzero


# What the sweep calls back into above the core, registered by tapegrad.autograd.hooks when it
# is imported (the package imports it): ``run_entry`` runs an entry that hooks watch,
# ``run_pyfunc`` a custom Function's backward.
HOOKS = types.SimpleNamespace(run_entry=None, run_pyfunc=None)


def _sweep_mods():
    """(reverse sweep, anomaly flags, hooks): the compiled interpreter's, imported on the first
    sweep, or its numpy twin while the compiled code is not in use (``pysweep``)."""
    global _SWEEP_MODS
    _SWEEP_MODS = (pysweep.current().reverse, ANOMALY, HOOKS)
    return _SWEEP_MODS


@_cache.on_switch
def _switched():
    global _SWEEP_MODS
    _SWEEP_MODS = None


def sweep(tp, seeds, retain_graph, needed=None, keep=False):
    """Reverse sweep of ``tp`` from the seeded nodes.

    seeds: [(node, flat cotangent)]. Returns (adjoints, nreach): an ``Adjoints`` and a
    per-node flag of which nodes received a cotangent. Raises PyTorch's errors for stale
    saved tensors and freed graphs before anything is accumulated. ``needed`` (autograd.grad):
    only those entries are freed afterwards, so graph below the requested inputs stays usable.
    ``keep``: the caller reads non-leaf cotangents afterwards (autograd.grad's inputs), so
    none is dropped on the way.
    """
    ne = len(tp.E) // K
    nn = len(tp.N) // NK
    adj = Adjoints(tp)
    A = adj.A
    flags = np.zeros(nn + ne + 2, np.uint8)        # one allocation: reached nodes, entries
    nreach, ereach = flags[:nn + 1], flags[nn + 1:]
    start = -1
    Nb = tp.N
    for node, g in seeds:
        b = node * NK
        off, size, slot = Nb[b + NOFF], Nb[b + NSIZE], Nb[b + NDT]
        if slot < 2 and size == g.size:            # a small node: add into its store
            a = A[slot][off:off + size]
            a += g
        else:                                      # (the implicit seed is read-only)
            adj.acc(Nb, node, g if g.flags.writeable else g.copy(), False)
        nreach[node] = 1
        prod = Nb[b + NPROD]
        if prod >= 0:
            ereach[prod] = 1
            if prod > start:
                start = prod
    _sweep_from(tp, adj, nreach, ereach, start, ne, retain_graph, needed, keep)
    return adj, nreach


def sweep_one(tp, node, retain_graph):
    """``sweep`` from one node of one element seeded with 1 (``loss.backward()``): the same
    sweep without the seed list. Returns (adjoints, nreach)."""
    ne = len(tp.E) // K
    nn = len(tp.N) // NK
    adj = Adjoints(tp)
    flags = np.zeros(nn + ne + 2, np.uint8)
    nreach, ereach = flags[:nn + 1], flags[nn + 1:]
    Nb = tp.N
    b = node * NK
    slot = Nb[b + NDT]
    if slot < 2:                              # a small node: its flat store
        adj.A[slot][Nb[b + NOFF]] += 1
    else:                                     # (only when tape.BIG is lowered, in tests)
        adj.acc(Nb, node, np.ones(1, NP_DT[slot & 1]), True)
    nreach[node] = 1
    start = Nb[b + NPROD]
    if start >= 0:
        ereach[start] = 1
    _sweep_from(tp, adj, nreach, ereach, start, ne, retain_graph, None)
    return adj, nreach


def _set_aside(tp):
    """Before a Python callback of a sweep of ``tp`` (custom Function backward, hook): grad mode
    off, as torch's engine runs a first-order backward (``is_grad_enabled()`` is False in hooks
    and backward functions; ``enable_grad`` turns it back on); and when ``tp`` is this thread's
    current tape, new leaf-only ops in the callback record on a fresh tape instead (``with
    enable_grad(): x = x.detach().requires_grad_() ...`` in a backward, as torch allows): ``tp``
    cannot grow now, the sweep holds views of its buffers. Returns what ``_restore`` puts back."""
    prev = STATE.enabled
    STATE.enabled = False
    d = _tls.__dict__
    if d.get("tape") is not tp:
        return STATE, prev, None
    consumed = d.pop("consumed", None)
    d["tape"] = None
    return STATE, prev, (tp, consumed)


def _restore(aside):
    state, prev, cur = aside
    state.enabled = prev
    if cur is None:
        return
    d = _tls.__dict__
    d["tape"] = cur[0]
    if cur[1] is not None:
        d["consumed"] = cur[1]
    else:
        d.pop("consumed", None)


def _grown_in_sweep():
    """The error for an op recorded, inside a backward callback, on a tensor of the graph being
    swept (its tape's buffers are held by the sweep and cannot grow)."""
    return NotImplementedError(
        "tapegrad cannot record an operation on a non-leaf tensor of the graph being "
        "differentiated from inside its backward (a custom Function's backward or a hook "
        "running under enable_grad). Differentiate a detached copy instead: "
        "x = x.detach().requires_grad_()")


def _sweep_from(tp, adj, nreach, ereach, start, ne, retain_graph, needed, keep=False):
    """The sweep proper (see ``sweep``): compiled runs from entry ``start`` down, Python for
    the entries that need it (custom Functions, hooks, big nodes), then the freeing."""
    reverse, _anomaly, _hooks = _SWEEP_MODS or _sweep_mods()
    A = adj.A
    bad = version_mask(tp, ne)
    err = None
    E = N = V4 = V8 = XA4 = XA8 = I = C = None
    # drop a big node's cotangent once its producer's VJP has read it (as torch frees a
    # node's gradient buffer): fewer live arrays of megabytes, warm memory reused sooner.
    # Not when a caller reads non-leaf cotangents afterwards (retain_grad, autograd.grad).
    drop = not keep and needed is None and not tp.retained
    SWEEPING[0] += 1
    try:
        E, N, V4, V8, XA4, XA8, I, C = store_views(tp)
        step = _anomaly["enabled"]
        while start >= 0:
            status, e = reverse(E, N, V4, V8, XA4, XA8, I, C, A[0], A[1], _DUMMY[0], _DUMMY[1],
                                False, nreach, ereach, bad, start, start if step else 0)
            if step and status == 0:             # anomaly mode: one entry at a time
                _check_nan(tp, start, adj, E, N)
                start -= 1
                continue
            if status == 0:
                break
            if status == 4:
                while True:
                    start = e - 1
                    if E[e * K + FL] & F_HOOK:
                        aside = _set_aside(tp)
                        try:
                            _hooks.run_entry(tp, e, adj, E, N, V4, V8, nreach, ereach)
                        except BufferError as exc:
                            raise _grown_in_sweep() from exc
                        finally:
                            _restore(aside)
                    else:
                        # a run of elementwise entries: one kernel call (not in anomaly mode,
                        # which checks each entry's gradients)
                        k = -2 if step or not _vmath.OK else _run_big(
                            tp, adj, e, E, N, V4, V8, XA4, XA8, nreach, ereach, bad, drop)
                        if k != -2:
                            start = k
                        else:
                            np_entry(tp, e, adj, E, N, V4, V8, nreach, ereach)
                            if drop:
                                adj.G.pop(E[e * K + OUT], None)
                    if step:
                        _check_nan(tp, e, adj, E, N)
                    # the next entry is big too (a chain of big ops): run it from here, without
                    # a trip through the interpreter (its 17 arguments cost ~2 us to pass);
                    # the same tests as ``reverse`` makes before it answers (4, e)
                    if start < 0 or step or not ereach[start] or bad[start]:
                        break
                    fl = E[start * K + FL]
                    if (not fl & F_BIG or (fl & F_FREED and fl & F_SAVES)
                            or E[start * K + OP] == PYFUNC_OPCODE):
                        break
                    e = start
            elif status == 1:
                aside = _set_aside(tp)
                try:
                    if E[e * K + FL] & F_HOOK:
                        _hooks.run_pyfunc(tp, e, adj, N, nreach, ereach)
                    else:
                        tp.pyfuncs[int(E[e * K + P0])].backward(adj, N, nreach, ereach)
                except BufferError as exc:
                    raise _grown_in_sweep() from exc
                finally:
                    _restore(aside)
                start = e - 1
            elif status == 2:
                err = e
                break
            else:
                err = -1 - e
                break
        if err is None and not retain_graph and ne and tp.n_saving > 0:
            # free what the sweep used for the outputs: the reached entries that saved values
            # (F_FREED matters only with F_SAVES: the others may be swept again, as in torch)
            fl = E[FL::K]
            reached = ereach[:ne]
            if needed is None and b"\0" not in reached.tobytes():
                # every entry was reached (the common case): all are freed. F_FREED is bit 0,
                # so or-ing it into entries without saved values changes nothing they do.
                np.bitwise_or(fl, F_FREED, out=fl)
                tp.n_saving = 0
            else:
                hit = (fl & (F_SAVES | F_FREED)) == F_SAVES
                np.logical_and(hit, reached if needed is None else reached & needed[:ne],
                               out=hit)
                k = int(_count_nonzero(hit))
                if k:
                    np.bitwise_or(fl, F_FREED, out=fl, where=hit)
                    tp.n_saving -= k
            del fl, reached
    except BaseException as exc:
        # a user callback (custom Function backward, hook) raised: its frames, kept alive by
        # the traceback, hold views of the tape's buffers; clear their locals (the traceback
        # keeps its lines) so the tape can keep growing.
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        SWEEPING[0] -= 1
        del E, N, V4, V8, XA4, XA8, I, C
    if err is not None:
        if err >= 0:
            raise _version_error(tp, err)
        raise RuntimeError(MSG_FREED)
    if not retain_graph:
        if getattr(_tls, "tape", None) is tp:     # retire(tp), inlined
            _tls.tape = None
            _tls.consumed = tp                    # its leaves carry over (_carry_leaves)
        if tp.n_saving <= 0 and not tp.pyfuncs:
            release(tp)


# the rows a run of big elementwise entries takes (``_runs.plan``), by opcode: the run kind
# (-1: not in runs, 0 unary, 1 binary, 2 the whole sum: its VJP broadcasts c g) and the
# row's ``_vmath`` code
_RUN_KIND = np.full(len(OPS), -1, np.int64)
_RUN_CODES = np.zeros(len(OPS), np.int64)
for _op in OPS:
    if _op is not None and _op.vm and not _op.rows:
        if _op.kind == UNARY and _op.name in _vmath.UNARY:
            _RUN_KIND[_op.opcode], _RUN_CODES[_op.opcode] = 0, _vmath.UNARY[_op.name]
        elif _op.kind == BINARY and _op.name in _vmath.BINARY:
            _RUN_KIND[_op.opcode], _RUN_CODES[_op.opcode] = 1, _vmath.BINARY[_op.name]
    elif _op is not None and _op.kind == SUM:
        _RUN_KIND[_op.opcode] = 2
del _op
RUN_MIN = 2            # entries in a run (one entry alone goes through np_entry)


def _run_big(tp, adj, e, E, N, V4, V8, XA4, XA8, nreach, ereach, bad, drop):
    """Sweep the run of big elementwise entries from entry e down in one kernel call
    (``_vmath.run_vjp``): block by block, each block through every entry's VJP. Returns
    the entry to go on from, or -2 when fewer than RUN_MIN entries qualify (nothing done).

    The run takes the entries the compiled sweep hands to numpy (F_BIG, reached, no hooks,
    saved values intact and not freed) whose row has vector-math kernels (``_vmath``), all
    of the same size and dtype, and the whole sums of nodes of that size; a binary row's
    single-element operand only when it needs no gradient (a Python number). Unreached
    entries inside it are skipped, as ``reverse``
    skips them. A node the run both makes (its producer is in the run) and uses gets a
    scratch row per block instead of an array when its cotangent is dropped after use
    (``drop``); the other nodes' cotangents are arrays in ``adj``, as np_entry leaves them,
    added to in the same order.

    The walk over the tape's rows is compiled (``_runs.plan``); here only the cotangent
    arrays of the adjoint dictionary are fetched and the new ones allocated."""
    if _RUN_KIND[E[e * K + OP]] < 0:   # not a run's row (a product, an index map...)
        return -2
    G = adj.G
    A = adj.A
    k, nscr, prog, cs, slots, left = _runs.plan(
        E, N, ereach, nreach, np.fromiter(G, np.int64, len(G)), bad, _RUN_KIND, _RUN_CODES,
        tp.C, A[0], A[1], e, drop, RUN_MIN)
    if k == -2:
        return -2
    sl = slots.tolist()
    nodes, srcs, kinds = sl[0], sl[1], sl[2]
    n = int(N[nodes[0] * NK + NSIZE])
    dslot = int(N[nodes[0] * NK + NDT])
    dt = NP_DT[dslot & 1]
    outs = prog[:, -1].tolist()
    if left:                           # sums of big outputs: c g rounded in the dtype
        for r in np.flatnonzero(prog[:, 2] < 0).tolist():
            if int(N[outs[r] * NK + NDT]) >= 2:
                cs[r] = float(dt(adj.get(N, outs[r])[0]) * dt(cs[r]))
    sk = slots[2]
    sa = slots[3]
    keep = []                          # the arrays whose addresses the kernel gets
    made = []
    for s, node in enumerate(nodes):
        if kinds[s] == _runs.SCRATCH:
            continue
        src = srcs[s]
        if src == _runs.NEW:
            arr = np.empty(n, dt)
            made.append((node, arr))
        elif src == _runs.BEFORE:
            arr = adj.writable(N, node)
            if not arr.flags.c_contiguous:
                arr = G[node] = arr.copy()
        else:                          # READ: an entry's whole cotangent, from before
            arr = G.get(node)
            if arr is None:
                arr = adj.get(N, node)
            if arr.strides[0] != 0 and not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
        if arr.strides[0] == 0:
            sk[s] = _runs.BROADCAST
        sa[s] = address(arr)
        keep.append(arr)
    V, XA = (V4, XA4) if dslot & 1 == 0 else (V8, XA8)
    _vmath.run_vjp(prog.reshape(-1), cs, sk, sa, V, XA, n, nscr)
    owned = adj.owned
    for node, arr in made:
        G[node] = arr
        owned.add(node)
    if drop:
        for o in outs:
            G.pop(o, None)
    return k


def _check_nan(tp, e, adj, E, N):
    """Anomaly mode: the gradients entry e produced must not contain NaN."""
    if not is_anomaly_check_nan_enabled():
        return
    for i, col in enumerate((IA, IB)):
        node = int(E[e * K + col])
        if node >= 0 and np.isnan(adj.get(N, node)).any():
            raise RuntimeError("Function '%s' returned nan values in its %dth output."
                               % (entry_name(tp, e), i))


def release(tp):
    """Free saved values once no entry needs them (a consumed graph)."""
    tp.V = [_F.__copy__(), _D.__copy__()]
    tp.XO = [[], []]
    tp.XA = [_Q.__copy__(), _Q.__copy__()]
    tp.sv = []
    tp.mark = None
    tp.released = True
    tp.watched = tp.dead = None
    tp.live = []


# --------------------------------------------------------------------- liveness
# Entries that no live tensor can reach are freed (their saved values dropped, the entry
# marked freed), so a graph's memory does not grow with results the user has let go of
# (issue 24: ``c = x * 2`` kept, 300 ``c.exp()`` dropped: the saved copies of their values
# are released, as torch frees a node with its last tensor). Results of at least WATCH_FROM
# elements are watched (a weakref with a callback, on the recording paths); when the ones
# that died unconsumed add up to a quarter of the tape's saved bytes (and at least
# COLLECT_MIN), ``collect`` finds what is still reachable from the live tensors of the tape
# (exactly: gc.get_referrers of the tape) and frees the rest. Small results are not watched
# (the check per result would cost more than their saved values); their unreachable entries
# are freed whenever a collection runs.
WATCH_FROM = BIG
COLLECT_MIN = 1 << 20
SWEEPING = [0]          # sweeps in progress (any thread): no collection meanwhile


def register(t, tp):
    """Register ``t`` (whose ``_tape`` is now ``tp``) for liveness (``_live_nodes``). The hot
    recording paths inline it: ``tp.live.append(_wref(t))``."""
    tp.live.append(_wref(t))


_wref = weakref.ref


class _Watch(weakref.ref):
    __slots__ = ("tp", "node", "nbytes")


class _Mark:
    """What a watched result's death is seen through: an attribute of the result, set after
    its ``_tape``, so it dies after the result's ``_tape`` reference is gone (CPython clears an
    object's attributes in the order they were first set) and ``_live_nodes``'s reference
    count of the tape holds no reference of the dying result."""
    __slots__ = ("__weakref__",)


def watch(t, tp, node):
    """Watch result ``t`` (node ``node`` of tape ``tp``): its death may free saved values."""
    m = t._lw = _Mark()
    w = _Watch(m, _died)
    wt = tp.wtape
    if wt is None:
        wt = tp.wtape = weakref.ref(tp)
    w.tp = wt
    w.node = node
    w.nbytes = t._data.nbytes
    ws = tp.watched
    if ws is None:
        ws = tp.watched = {}
    ws[id(w)] = w


def _died(w):
    tp = w.tp()
    if tp is None:
        return
    ws = tp.watched
    if ws is not None:
        ws.pop(id(w), None)
    if tp.released or tp.crefs is not None or tp.into is not None:
        return
    node = w.node
    dead = tp.dead
    if dead is None:
        dead = tp.dead = []
    dead.append(node)
    try:
        if _consumed(tp, node):
            return
        tp.dead_bytes += w.nbytes
        if tp.dead_bytes >= max(COLLECT_MIN, tp.nbytes >> 2) and not SWEEPING[0]:
            collect(tp)
    except Exception:                              # noqa: BLE001 - a weakref callback:
        pass                                       # freeing is an optimisation, never an error


def _consumed(tp, node):
    """Whether an entry recorded after ``node``'s producer reads it (an operand or a custom
    Function's input). Only entries after the producer can: a short scan for a temporary."""
    prod = tp.N[node * NK + NPROD]
    if prod < 0:
        return True
    rows = tp.E[(prod + 1) * K:]                   # a copy: no buffer export
    if len(rows):
        Ev = np.frombuffer(rows, np.int64).reshape(-1, K)
        if (Ev[:, IA] == node).any() or (Ev[:, IB] == node).any():
            return True
    for rec in tp.pyfuncs:
        if node in rec.in_nodes:
            return True
    return False


_EMPTY_SAVED = (np.zeros(1, np.float32), np.zeros(1, np.float64))


def _live_nodes(tp, held):
    """Nodes of ``tp`` held by live tensors, and entries held by grad_fn objects.

    The tensors are those the recording paths registered (``register``): no heap scan. The
    registry is checked to be complete by reference counts: every strong reference to ``tp``
    and to the tapes absorbed into it must be a registered tensor's ``_tape``, a grad_fn
    view's, an absorbed tape's ``into``, this thread's current/consumed tape, or one of the
    ``held`` references of the callers (and this function's own). Any other holder (a tensor
    some path did not register, another thread's current tape, a frame of code the collection
    interrupted) makes it fall back to the exact scan, ``_live_nodes_gc``."""
    tps = [tp]
    shift = {id(tp): 0}
    if tp.stubs:
        alive = []
        for r in tp.stubs:
            s = r()
            if s is None:
                continue
            alive.append(r)
            d, u = s.dn, s.into
            while u is not tp and u is not None:
                d += u.dn
                u = u.into
            if u is tp:
                shift[id(s)] = d
                tps.append(s)
        tp.stubs = alive
    count = dict.fromkeys(shift, 0)
    nodes, keep, seen = [], [], set()
    for r in tp.live:
        t = r()
        if t is None:
            continue
        i = id(t)
        if i in seen:
            continue
        seen.add(i)
        keep.append(r)
        tt = t._tape
        d = shift.get(id(tt))
        if d is not None and tt is not None:
            count[id(tt)] += 1
            nodes.append(t._node + d)
    tp.live = keep
    for v in tp.views.values():
        vt = v._tape
        if id(vt) in count and vt is not None:
            count[id(vt)] += 1
    for s in tps[1:]:
        count[id(s.into)] += 1
    tl = _tls.__dict__
    for k in ("tape", "consumed"):
        o = tl.get(k)
        if o is not None and id(o) in count:
            count[id(o)] += 1
    t = tt = u = s = v = vt = o = None             # (no local of this frame holds a tape now)
    # the references of this frame (tps, the loop variable, getrefcount's argument; tp's
    # argument) and of its callers (``held``)
    for s in tps:
        if sys.getrefcount(s) != count[id(s)] + (3 if s is not tp else 4 + held):
            s = None
            return _live_nodes_gc(tp)
    return nodes, list(tp.views)


def _live_nodes_gc(tp):
    """``_live_nodes`` by a heap scan: the objects that reference the tape or a tape absorbed
    into it (gc.get_referrers: tens of ms in a big process)."""
    import gc                                      # deferred: used by collections only
    FALLBACKS[0] += 1
    nodes, entries = [], list(tp.views)
    targets = {id(tp): 0}                          # tape id -> node shift to tp
    todo = [tp]
    while todo:
        refs = gc.get_referrers(*todo)
        todo = []
        for o in refs:
            if type(o) is dict:
                t, n = o.get("_tape"), o.get("_node")
            elif isinstance(o, Tape):
                if o.into is not None and id(o.into) in targets and id(o) not in targets:
                    targets[id(o)] = targets[id(o.into)] + o.dn
                    todo.append(o)
                continue
            else:
                t, n = getattr(o, "_tape", None), getattr(o, "_node", None)
            if t is not None and id(t) in targets and isinstance(n, (int, np.integer)):
                nodes.append(int(n) + targets[id(t)])
        del refs
    return nodes, entries


FALLBACKS = [0]         # collections that scanned the heap (tests read it)


def collect(tp, held=1):
    """Free the saved values of the entries of ``tp`` that no live tensor can reach (see
    WATCH_FROM). Reachable: the producers of live tensors' nodes, of nodes nothing consumes
    yet that are not known dead (an operation being recorded holds them), of grad_fn objects'
    entries, and everything those entries read. Freed entries raise MSG_FREED if ever swept
    (they cannot be: nothing reaches them)."""
    tp.dead_bytes = 0
    if tp.released or tp.crefs is not None or tp.into is not None or SWEEPING[0]:
        return 0
    live, entries = _live_nodes(tp, held + 1)
    Ev = np.frombuffer(tp.E[:], np.int64).reshape(-1, K)
    Nv = np.frombuffer(tp.N[:], np.int64).reshape(-1, NK)
    ne, nn = Ev.shape[0], Nv.shape[0]
    if not ne:
        return 0
    prod = Nv[:, NPROD]
    ops = Ev[:, OP]
    pyf = np.flatnonzero(ops == PYFUNC_OPCODE)
    ins = [Ev[:, IA], Ev[:, IB]]
    extra = {}                                     # custom Function entry -> its input nodes
    for e in pyf.tolist():
        extra[e] = [n for n in tp.pyfuncs[int(Ev[e, P0])].in_nodes if n >= 0]
    consumed = np.zeros(nn + 1, bool)
    for col in ins:
        consumed[col[col >= 0]] = True
    for v in extra.values():
        consumed[v] = True
    nlive = np.zeros(nn, bool)
    nlive[[n for n in live if 0 <= n < nn]] = True
    dead = np.zeros(nn, bool)
    if tp.dead:
        dead[[n for n in tp.dead if 0 <= n < nn]] = True
    nlive |= ~consumed[:nn] & ~dead
    elive = np.zeros(ne, bool)
    p = prod[nlive]
    elive[p[p >= 0]] = True
    elive[[e for e in entries if 0 <= e < ne]] = True
    # reverse topological order: an entry's inputs were made before it
    el = elive.tolist()
    nl = nlive.tolist()
    pl = prod.tolist()
    IAl, IBl = ins[0].tolist(), ins[1].tolist()
    top = max((e for e in range(ne) if el[e]), default=-1)
    for e in range(top, -1, -1):
        if not el[e]:
            continue
        for n in (IAl[e], IBl[e]) if e not in extra else [IAl[e], IBl[e]] + extra[e]:
            if n >= 0 and not nl[n]:
                nl[n] = True
                q = pl[n]
                if q >= 0:
                    el[q] = True
    elive = np.array(el, bool)
    fl = Ev[:, FL]
    gone = ~elive
    # an entry a backward already freed never runs again either: its saved values go too
    spent = gone | ((fl & (F_SAVES | F_FREED)) == (F_SAVES | F_FREED))
    newly = gone & ((fl & (F_SAVES | F_FREED)) == F_SAVES)
    # saved arrays used only by gone entries (a code can be shared by several entries)
    vd = Nv[Ev[:, OUT], NDT] & 1
    keep = [set(), set()]
    drop = [set(), set()]
    for col in (SA, SB, SY):
        c = Ev[:, col]
        for d in (0, 1):
            m = (c <= -2) & (vd == d)
            keep[d].update((-2 - c[m & ~spent]).tolist())
            drop[d].update((-2 - c[m & spent]).tolist())
    freed = 0
    for d in (0, 1):
        XO, XA, z = tp.XO[d], tp.XA[d], _EMPTY_SAVED[d]
        za = address(z)
        for j in drop[d] - keep[d]:
            a = XO[j]
            if a is z:
                continue
            freed += a.nbytes
            XO[j] = z
            XA[2 * j] = za
            XA[2 * j + 1] = 0
    E = tp.E
    for e in np.flatnonzero(gone & ((fl & (F_SAVES | F_FREED)) != (F_SAVES | F_FREED))).tolist():
        E[e * K + FL] |= F_SAVES | F_FREED
    tp.n_saving -= int(np.count_nonzero(newly))
    tp.nbytes = max(0, tp.nbytes - freed)
    if tp.sv:
        tp.sv = [r for r in tp.sv if not gone[r[2]]]
    tp.dead = [n for n in tp.dead or () if prod[n] >= 0 and not gone[prod[n]]] or None
    return freed


# --------------------------------------------------------------------- replay
def replay(tp, outputs, leaves, values, cotangents=None):
    """Re-evaluate a recorded tape on new leaf values, forward and (optionally) reverse,
    entirely in the compiled interpreter.

    outputs: non-leaf tensors recorded on ``tp``; leaves: leaf tensors of ``tp``; values: new
    arrays for those leaves (other leaves keep their recorded values). ``cotangents``: one
    array per output to seed the reverse sweep, or None for a forward-only replay.
    Returns (output values, leaf gradients or None).
    """
    sw = pysweep.current()
    forward, reverse = sw.forward, sw.reverse
    if tp.released:
        raise RuntimeError("this tape's saved values were freed by a backward pass; record it "
                           "again (or backward with retain_graph=True) to replay it")
    if tp.pyfuncs:
        raise NotImplementedError("tapes with custom autograd.Functions cannot be replayed in "
                                  "compiled code yet")
    ne, nn = len(tp.E) // K, len(tp.N) // NK
    X = [np.zeros(max(tp.asz[s], 1), NP_DT[s & 1]) for s in range(4)]
    Nv = view_i64(tp.N).reshape(-1, NK)
    given = {id(t): v for t, v in zip(leaves, values)}
    for node, ref in tp.leaf_pairs:
        leaf = ref()
        if leaf is None:
            continue
        off, size, dt = int(Nv[node, NOFF]), int(Nv[node, NSIZE]), int(Nv[node, NDT])
        v = given.get(id(leaf), leaf._data)
        X[dt][off:off + size] = np.asarray(v, NP_DT[dt & 1]).reshape(-1)
    outs = []
    for t in outputs:
        otp, node = resolve(t)
        if otp is not tp:
            raise ValueError("output was not recorded on this tape")
        outs.append((node, int(Nv[node, NOFF]), int(Nv[node, NSIZE]), int(Nv[node, NDT]), t._data.shape))
    del Nv
    E = N = V4 = V8 = XA4 = XA8 = I = C = None
    try:
        E, N, V4, V8, XA4, XA8, I, C = store_views(tp)
        start = 0
        while True:
            stop = forward(E, N, V4, V8, XA4, XA8, I, C, X[0], X[1], start, ne)
            if stop < 0:
                break
            np_forward(tp, stop, E, N, V4, V8, X)
            start = stop + 1
        values_out = [X[dt][off:off + size].reshape(shape).copy() for _, off, size, dt, shape in outs]
        if cotangents is None:
            return values_out, None
        adj = Adjoints(tp)
        A = adj.A
        nreach = np.zeros(max(nn, 1), np.uint8)
        ereach = np.zeros(max(ne, 1), np.uint8)
        start = -1
        for (node, off, size, dt, shape), g in zip(outs, cotangents):
            adj.acc(N, node, np.asarray(g, NP_DT[dt & 1]).reshape(-1), False)
            nreach[node] = 1
            prod = int(N[node * NK + NPROD])
            if prod >= 0:
                ereach[prod] = 1
                start = max(start, prod)
        nobad = np.zeros(max(ne, 1), np.uint8)
        while start >= 0:
            status, e = reverse(E, N, V4, V8, XA4, XA8, I, C, A[0], A[1], X[0], X[1], True,
                                nreach, ereach, nobad, start, 0)
            if status != 4:
                break
            np_entry(tp, e, adj, E, N, V4, V8, nreach, ereach, X)
            start = e - 1
        grads = []
        for leaf in leaves:
            g = None
            for node, ref in tp.leaf_pairs:
                if ref() is leaf:
                    part = adj.get(N, node).reshape(leaf._data.shape)
                    g = part.copy() if g is None else g + part
            grads.append(g)
        return values_out, grads
    finally:
        del E, N, V4, V8, XA4, XA8, I, C


def _np_context(tp, e, E, N, V4, V8, X):
    """(row, out, a, b, c, value dtype, n, val) for running entry e with numpy."""
    b0 = e * K
    op = OPS[int(E[b0 + OP])]
    out, a, b = int(E[b0 + OUT]), int(E[b0 + IA]), int(E[b0 + IB])
    ci = int(E[b0 + CI])
    c = tp.C[ci] if ci >= 0 else 0.0
    vdt = int(N[out * NK + NDT]) & 1
    Vd = V4 if vdt == 0 else V8
    n = int(N[out * NK + NSIZE])

    def val(node, s, m):
        """An operand's value: live node value (replay), else the saved copy/reference."""
        if X is not None and node >= 0:
            o, slot = int(N[node * NK + NOFF]), int(N[node * NK + NDT])
            return X[slot][o:o + m]
        if s == -1:
            return None                       # not saved: the VJP does not read it
        if s <= -2:
            return tp.XO[vdt][-2 - s].reshape(-1)[:m]
        return Vd[s:s + m]
    return op, b0, out, a, b, c, vdt, n, val


def np_entry(tp, e, adj, E, N, V4, V8, nreach, ereach, X=None):
    """Run entry ``e``'s VJP with numpy (entries touching big nodes: SIMD ufuncs, BLAS).
    Operands come from the saved values (V/XO), or from the node values X during a replay."""
    op, b0, out, a, b, c, vdt, n, val = _np_context(tp, e, E, N, V4, V8, X)
    g = adj.get(N, out)

    def acc(node, contrib):
        """Add a contribution (None: already added) and mark the node reached."""
        if node < 0:
            return
        if contrib is not None:
            adj.acc(N, node, contrib, contrib is not g)
        nreach[node] = 1
        p = int(N[node * NK + NPROD])
        if p >= 0:
            ereach[p] = 1

    kind = op.kind
    vm = op.vm and n >= _vmath.MIN and _vmath.OK
    if kind == UNARY:
        x, y = val(a, int(E[b0 + SA]), n), val(out, int(E[b0 + SY]), n)
        gx = np.empty(n, g.dtype)
        if op.rows:                            # softmax: whole rows, one call
            op.np_vjp(g, x, y, c, gx)
        elif not (vm and _vmath.unary_vjp(op.name, g, x, y, gx, c)):
            _par.run(lambda i, j: op.np_vjp(g[i:j], _par.part(x, i, j), _par.part(y, i, j), c,
                                            gx[i:j]), n)
        acc(a, gx)
    elif kind == BINARY:
        la = n if E[b0 + P0] else 1
        lb = n if E[b0 + P1] else 1
        if op.vjp_sign is not None:            # add / sub: the gradients are +-g itself
            for node, sign in ((a, op.vjp_sign[0]), (b, op.vjp_sign[1])):
                if node >= 0 and sign > 0:
                    acc(node, g)
                elif node >= 0:
                    neg = np.empty(n, g.dtype)
                    if not (vm and _vmath.unary_vjp("neg", g, None, None, neg)):
                        _par.run(lambda i, j: np.negative(g[i:j], out=neg[i:j]), n)
                    acc(node, neg)
            return
        av, bv = val(a, int(E[b0 + SA]), la), val(b, int(E[b0 + SB]), lb)
        if (vm and lb == 1 and la == n and n > 1 and (op.name == "mul" or op.name == "div")
                and g.flags.c_contiguous and g.size == n):
            # a single-element b broadcast (x / x.sum(), x * w): a's gradient in one pass, b's
            # a dot product (no n-element temporary to sum)
            if a >= 0:
                ga = np.empty(n, g.dtype)
                _vmath.binary_fwd(op.name, g, bv, ga)
                acc(a, ga)
            if b >= 0:
                d = np.dot(g, av.reshape(-1))
                if op.name == "div":
                    d = -d / (bv[0] * bv[0])
                acc(b, np.full(1, d, g.dtype))
            return
        y = val(out, int(E[b0 + SY]), n)
        ga = np.empty(n, g.dtype) if a >= 0 else None
        gb = np.empty(n, g.dtype) if b >= 0 else None
        if vm and _vmath.binary_vjp(op.name, g, av, bv, ga, gb, n):
            acc(a, ga)
            acc(b, gb)
            return
        _par.run(lambda i, j: op.np_vjp(g[i:j], _par.part(av, i, j), _par.part(bv, i, j),
                                        _par.part(y, i, j), _par.part(ga, i, j),
                                        _par.part(gb, i, j)), n)
        acc(a, ga)                             # a single-element operand's gradient is summed
        acc(b, gb)
    elif kind == SUM:
        adj.acc(N, a, op.np_vjp(g, c, int(N[a * NK + NSIZE])), False)   # a view: not owned
        acc(a, None)
    elif kind == INDEX:
        nin = int(N[a * NK + NSIZE])
        p0, p1 = int(E[b0 + P0]), int(E[b0 + P1])
        if op.name == "slice":         # y[i] = x[p0 + i]  ->  gx[p0 + i] += g[i]
            gx = np.zeros(nin, g.dtype)
            gx[p0:p0 + p1] = g
            acc(a, gx)
            return
        if op.name == "embed":         # y[p0 + i] = x[i]  ->  gx[i] += g[p0 + i]
            acc(a, g[p0:p0 + p1].copy())
            return
        if op.name == "transpose":     # y (c, p0) = x (p0, c)^T  ->  gx = g^T
            if not p0:
                acc(a, g.copy())
                return
            g2 = g.reshape(-1, p0)
            if _layout.usable(g2):         # big: tiled on every core, added in place
                cur = adj.inplace(N, a)
                if cur is not None:
                    _layout.transpose(g2, cur.reshape(p0, -1), add=True)
                    acc(a, None)
                else:
                    acc(a, _layout.transpose(g2).reshape(-1))
                return
            acc(a, np.ascontiguousarray(g2.T).reshape(-1))
            return
        idx = tp.I.get(p0, p1)
        if op.name == "gather" and p1 * 8 <= nin:
            # few indices into a big input (amax's extremum): added into x's cotangent in
            # place, without a dense bincount of nin float64 (10^5: ~90 -> ~15 us)
            np.add.at(adj.writable(N, a), idx, g)
            acc(a, None)
            return
        fast = g.dtype.kind == "f" and g.dtype.itemsize >= 4 and g.ndim == 1
        if op.name == "gather":        # y[i] = x[idx[i]]  ->  gx[idx[i]] += g[i]
            gx = (_scatter.add(idx, g, nin) if fast
                  else np.bincount(idx, weights=g, minlength=nin).astype(g.dtype))
        elif op.name == "segsum":      # y[idx[i]] += c x[i]  ->  gx[i] += c g[idx[i]]
            gx = _scatter.take(g, idx, c) if fast else g[idx] * g.dtype.type(c)
        else:                          # copy
            gx = g
        acc(a, gx)
    elif kind == MM:
        m, k = int(E[b0 + P0]), int(E[b0 + P1])
        nn = n // m
        av = val(a, int(E[b0 + SA]), m * k)
        bv = val(b, int(E[b0 + SB]), k * nn)
        g2 = g.reshape(m, nn)
        av = None if av is None else av.reshape(m, k)
        bv = None if bv is None else bv.reshape(k, nn)
        # a product added straight into a cotangent that is already there (BLAS beta = 1)
        # instead of into a new array added afterwards. Both operands: the two products at
        # once (x @ x: b's into a new array, added into a's after)
        oa = adj.inplace(N, a) if a >= 0 else None
        ob = adj.inplace(N, b) if b >= 0 and b != a else None
        ga, gb = op.np_vjp(g2, av, bv, a >= 0, b >= 0,
                           oa=None if oa is None else oa.reshape(m, k),
                           ob=None if ob is None else ob.reshape(k, nn))
        acc(a, None if ga is None else ga.reshape(-1))
        acc(b, None if gb is None else gb.reshape(-1))
    elif kind == CAST:
        acc(a, g.astype(NP_DT[int(N[a * NK + NDT]) & 1]))
    else:
        raise AssertionError("no numpy VJP for kind %s" % kind)


def np_forward(tp, e, E, N, V4, V8, X):
    """Replay entry ``e``'s forward with its row's numpy reference (F_BIG entries)."""
    op, b0, out, a, b, c, vdt, n, val = _np_context(tp, e, E, N, V4, V8, X)
    if op.kind == PYFUNC:
        raise NotImplementedError("tapes with custom autograd.Functions cannot be replayed in "
                                  "compiled code yet")
    o, slot = int(N[out * NK + NOFF]), int(N[out * NK + NDT])
    y = X[slot][o:o + n]
    if op.kind == UNARY:
        y[:] = op.ref(val(a, int(E[b0 + SA]), n), c)
    elif op.kind == BINARY:
        la = n if E[b0 + P0] else 1
        lb = n if E[b0 + P1] else 1
        y[:] = op.ref(val(a, int(E[b0 + SA]), la), val(b, int(E[b0 + SB]), lb))
    elif op.kind == SUM:
        y[:] = op.ref(val(a, -1, int(N[a * NK + NSIZE])), c)
    elif op.kind == INDEX:
        x = val(a, -1, int(N[a * NK + NSIZE]))
        p0 = int(E[b0 + P0])
        idx = p0 if op.opcode in OFFSET_OPS else tp.I.get(p0, int(E[b0 + P1]))
        y[:] = op.ref(x, idx, c if op.name == "segsum" else 1.0, n)
    elif op.kind == MM:
        m, k = int(E[b0 + P0]), int(E[b0 + P1])
        y[:] = (val(a, int(E[b0 + SA]), m * k).reshape(m, k)
                @ val(b, int(E[b0 + SB]), k * (n // m)).reshape(k, n // m)).reshape(-1)
    elif op.kind == CAST:
        y[:] = val(a, -1, n)


def _operands(E, e):
    kind = OPS[int(E[e, OP])].kind
    if kind in (BINARY, MM):
        return (int(E[e, IA]), int(E[e, IB]))
    if kind == PYFUNC:
        return ()
    return (int(E[e, IA]),)
