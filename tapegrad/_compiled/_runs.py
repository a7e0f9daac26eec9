"""The plan of a run of big elementwise VJPs (``tape._run_big``), compiled.

``tape._run_big`` sweeps a run of big elementwise entries in one kernel call
(``_vmath.run_vjp``). Deciding which entries join the run, where each cotangent lives and
which nodes get scratch rows walks the tape's entry and node rows one by one; in Python that
cost ~25-55 us per run (a 2-entry run at 10^5 elements: ~30 us besides a ~40 us kernel).
``plan`` does the walk in compiled code over the same int64 rows the interpreter reads and
hands back the program and a table of cotangent slots; Python then only fetches the arrays
that live in the adjoint dictionary (``Adjoints.G``) and allocates the new ones.

Slots (one per node the run reads a cotangent of or adds one to), ``src``:

- ``NEW``: the run makes its cotangent (its first contribution is row ``first``);
- ``BEFORE``: it already has one (from entries swept before the run, or added in place);
- ``READ``: an entry's own cotangent that came whole from before the run (only read).

A ``NEW`` slot that is read by its producer inside the run (``read`` >= 0) gets a scratch
row per block when ``drop`` (its cotangent is dropped after use): rows are reused once the
reading row has passed (``kind`` SCRATCH, ``row``).

Compile cost (cold, once per machine): ~3 s. The slots and the entries reached so far are
short lists searched linearly (a run is tens of rows), and the program grows as a flat list:
typed dicts and sets, a growable 2-D array and a stable argsort had made it ~9 s.
"""
import numpy as np
from numba import njit

from ._addr import INTERNAL
from ._vmath import RUN_W
from .._schema import (CI, F_BIG, F_FREED, F_HOOK, F_SAVES, FL, IA, IB, K, NDT, NK, NOFF, NPROD,
                       NSIZE, OP, OUT, P0, P1, SA, SB, SY)

NEW, BEFORE, READ = 0, 1, 2
ARRAY, BROADCAST, SCRATCH = 0, 1, 2      # slot kinds for the kernel (``_vmath.run_vjp``)


@njit(cache=True, nogil=True, no_cfunc_wrapper=True)
def plan(E, N, ereach, nreach, gkeys, bad, rkind, rcode, C, A4, A8, e, drop, run_min):
    """Walk the run from entry e down. A node has a cotangent already when it is reached
    (``nreach``) or in the adjoint dictionary (its keys: ``gkeys``). ``rkind`` / ``rcode``:
    per opcode, the run kind (-1: not in runs, 0 unary, 1 binary, 2 whole sum) and the
    kernel's code.

    A4 / A8: the small nodes' cotangent stores (a sum's output is one element).

    Returns (k, nscr, prog, cs, slots, left): k, the entry to go on from (-2: fewer than
    run_min rows, nothing changed); nscr scratch rows; prog (rows, RUN_W), the last column
    each row's output node; cs, the rows' constants (a sum's row, cotangent slot -1: c times
    the sum's one-element cotangent, rounded in the dtype as the sum's VJP rounds it; just c
    for a sum whose output is a big node (``tape.BIG`` lowered), ``left`` of them, the
    caller multiplying in its cotangent); slots (4, slots): each one's
    node, src, kernel kind (ARRAY for the caller to settle, or SCRATCH) and scratch row. On
    success the nodes the run makes a cotangent for are marked reached (and their
    producers)."""
    none = (np.zeros((0, RUN_W), np.int64), np.zeros(0, np.float64), np.zeros((4, 0), np.int64))
    out = E[e * K + OUT]
    op = E[e * K + OP]
    if 0 <= op < rkind.size and rkind[op] == 2:
        out = E[e * K + IA]           # a sum: the run is as big as its input
    n = N[out * NK + NSIZE]
    dslot = N[out * NK + NDT]
    if dslot < 2:                     # a small node: the flat stores
        return -2, 0, none[0], none[1], none[2], 0
    left = 0
    prog = [0]                         # the program's rows, flat (RUN_W a row)
    prog.pop()
    cs = []
    # slots and the entries reached are few (a run is tens of rows): lists searched
    # linearly, not typed dicts and sets (those cost ~8 s more to compile cold)
    snode = []
    ssrc = []
    sfirst = []
    sread = []
    hit = [-1]                         # entries the run has reached so far
    k = e
    while k >= 0:
        b0 = k * K
        o = E[b0 + OUT]
        if not ereach[k] and not _has(hit, k):  # unreached: skipped, as reverse skips it
            k -= 1
            continue
        fl = E[b0 + FL]
        op = E[b0 + OP]
        kind = rkind[op] if 0 <= op < rkind.size else -1
        if (kind < 0 or not fl & F_BIG or fl & F_HOOK or (fl & F_FREED and fl & F_SAVES)
                or bad[k]):
            break
        a = E[b0 + IA]
        b = E[b0 + IB]
        row = len(cs)
        if kind == 2:
            # a sum of a node of the run's size: the input's contribution is its one-element
            # cotangent (complete: its users come after it, and none is in the run) times c
            if a < 0 or N[a * NK + NSIZE] != n or N[a * NK + NDT] != dslot:
                break
            da = _find(snode, a)
            ma = 1
            if da < 0:
                da, ma = _new_slot(a, row, N, nreach, gkeys, snode, ssrc, sfirst, sread, hit)
            _row(prog, 1, 0, -1, da, ma, -1, 0, 1, 1, -1, -1, o)   # an add's a: += c g
            ci = E[b0 + CI]
            c = C[ci] if ci >= 0 else 1.0
            so = N[o * NK + NDT]
            if so == 0:                 # c g in the dtype
                c = np.float64(np.float32(A4[N[o * NK + NOFF]]) * np.float32(c))
            elif so == 1:
                c = A8[N[o * NK + NOFF]] * c
            else:
                left += 1
            cs.append(c)
            k -= 1
            continue
        if N[o * NK + NSIZE] != n or N[o * NK + NDT] != dslot:
            break
        if kind == 0:
            fa = 1
            fb = 1
            sx = E[b0 + SA]
            sy = E[b0 + SY]
        else:
            fa = E[b0 + P0]
            fb = E[b0 + P1]
            sx = E[b0 + SA]
            sy = E[b0 + SB]
            if (a >= 0 and not fa) or (b >= 0 and not fb):
                break                           # a single-element operand's gradient: a sum
        if a >= 0 and (N[a * NK + NSIZE] != n or N[a * NK + NDT] != dslot):
            break
        if b >= 0 and (N[b * NK + NSIZE] != n or N[b * NK + NDT] != dslot):
            break
        gs = _find(snode, o)
        if gs < 0:                              # its whole cotangent came from before the run
            gs = len(snode)
            snode.append(o)
            ssrc.append(READ)
            sfirst.append(-1)
            sread.append(-1)
        sread[gs] = row
        da, ma, db, mb = -1, 0, -1, 0
        if a >= 0:
            da = _find(snode, a)
            ma = 1
            if da < 0:
                da, ma = _new_slot(a, row, N, nreach, gkeys, snode, ssrc, sfirst, sread, hit)
        if b >= 0:
            db = _find(snode, b)
            mb = 1
            if db < 0:
                db, mb = _new_slot(b, row, N, nreach, gkeys, snode, ssrc, sfirst, sread, hit)
        _row(prog, kind, rcode[op], gs, da, ma, db, mb, fa, fb, sx, sy, o)
        ci = E[b0 + CI]
        cs.append(C[ci] if ci >= 0 else 0.0)
        k -= 1
    nrows = len(cs)
    if nrows < run_min:
        return -2, 0, none[0], none[1], none[2], 0
    ns = len(snode)
    slots = np.zeros((4, ns), np.int64)
    for s in range(ns):
        slots[0, s] = snode[s]
        slots[1, s] = ssrc[s]
    # scratch rows for the nodes made and read inside the run: in order of first
    # contribution (the order NEW slots are made in), the first row whose last reader has
    # passed, else a new one
    ends = [0]
    ends.pop()
    for s in range(ns):
        if ssrc[s] == NEW and drop and sread[s] >= 0:
            f = sfirst[s]
            r = 0
            while r < len(ends) and ends[r] >= f:
                r += 1
            if r == len(ends):
                ends.append(0)
            ends[r] = sread[s]
            slots[2, s] = SCRATCH
            slots[3, s] = r
    for s in range(ns):                 # reached: the nodes the run adds a first cotangent to
        if ssrc[s] == NEW:
            node = snode[s]
            nreach[node] = 1
            p = N[node * NK + NPROD]
            if p >= 0:
                ereach[p] = 1
    return k, len(ends), np.array(prog).reshape(nrows, RUN_W), np.array(cs), slots, left


@njit(**INTERNAL)
def _row(prog, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11):
    """Append a program row (RUN_W values) to the flat list prog."""
    prog.append(c0)
    prog.append(c1)
    prog.append(c2)
    prog.append(c3)
    prog.append(c4)
    prog.append(c5)
    prog.append(c6)
    prog.append(c7)
    prog.append(c8)
    prog.append(c9)
    prog.append(c10)
    prog.append(c11)


@njit(**INTERNAL)
def _find(xs, v):
    """Index of v in the list (or array) xs, -1 if absent."""
    for i in range(len(xs)):
        if xs[i] == v:
            return i
    return -1


@njit(**INTERNAL)
def _has(xs, v):
    return _find(xs, v) >= 0


@njit(**INTERNAL)
def _new_slot(node, row, N, nreach, gkeys, snode, ssrc, sfirst, sread, hit):
    """A slot for a node first met as an operand of row ``row``: (slot, mode), mode 1 when
    its cotangent is there already (the run adds to it), 0 when this row makes it."""
    s = len(snode)
    snode.append(node)
    sread.append(-1)
    hit.append(N[node * NK + NPROD])   # reached now (unbind's parts: their base's producer)
    if nreach[node] or _has(gkeys, node):
        ssrc.append(BEFORE)
        sfirst.append(-1)
        return s, 1
    ssrc.append(NEW)
    sfirst.append(row)
    return s, 0
