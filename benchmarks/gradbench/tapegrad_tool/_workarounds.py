"""Workarounds for tapegrad.func bugs this tool meets, each applied only when a probe shows the
bug, and announced on stderr (never silent). Remove one when its probe passes on main.

1. Eager-tape rotation inside a recording. The eager recorder starts a new tape when an op
   reads leaves only and the current tape holds more than ``ROTATE_AT`` (1,024) entries or
   ``ROTATE_BYTES`` (4 MiB) of saved values. When that happens while ``tapegrad.func``
   records, the recorded tape loses everything before the rotation: the replay returns 0 and
   zero gradients (reported with feat/gradbench; issue 31 item 2 is the same fault at 2^18
   elements). GMM at d=10, k=25, the LSTM and the hand tracker cross it. The workaround
   raises both limits, so the tool's process keeps one eager tape for good: the memory bound
   the rotation gives eager code (dropped graphs) does not matter for this tool, whose eager
   work is a few calls per message.
"""
import sys


def _rotation_bug():
    import numpy as np
    import tapegrad as tg
    import tapegrad.func as tf

    def f(x, c):
        y = x
        for _ in range(1100):
            y = y * 1.0001
        return (y * (x * c[0])).sum() + (x * c[1]).sum()

    x = tg.tensor(np.arange(1.0, 4.0))
    c = tg.tensor(np.array([0.5, 2.0]))
    want = float(f(x, c))
    got = float(tf.grad_and_value(f, argnums=1)(x, c)[1])
    return abs(got - want) > 1e-9 * abs(want)


def apply(log=sys.stderr):
    """Probe each known bug; work around the ones present. Returns their names."""
    applied = []
    if _rotation_bug():
        big = 1 << 62
        for name, mod in list(sys.modules.items()):     # the core moves between modules
            if name.startswith("tapegrad") and mod is not None:
                for attr in ("ROTATE_AT", "ROTATE_BYTES", "_ROT_E"):
                    if isinstance(getattr(mod, attr, None), int):
                        setattr(mod, attr, big)
        fixed = not _rotation_bug()
        applied.append("tape-rotation" if fixed else "tape-rotation (NOT fixed by the workaround)")
        print("tapegrad tool: tapegrad.func loses recordings across an eager-tape rotation; "
              "rotation disabled in this process (%s)" % ("works" if fixed else "DID NOT HELP"),
              file=log, flush=True)
    return applied
