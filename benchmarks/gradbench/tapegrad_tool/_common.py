"""Conversions shared by the eval modules (all untimed: before and after the runs)."""
import functools

import numpy as np
import tapegrad as tg
import tapegrad.func as tf


def f64(data):
    """A float64 tensor from JSON lists (no grad: tapegrad.func makes its own leaves)."""
    return tg.from_numpy(np.asarray(data, dtype=np.float64))


def tolist(t):
    return t.numpy().tolist() if isinstance(t, tg.Tensor) else np.asarray(t).tolist()


@functools.lru_cache(maxsize=32)
def _compiled(f, static):
    return tg.compile(functools.partial(f, **dict(static)))


def compiled(f, **static):
    """``tapegrad.compile`` of ``f`` with the non-tensor arguments ``static`` bound (it takes
    tensors only), built once per ``static``: recorded on its first call, replayed after."""
    return _compiled(f, tuple(sorted(static.items())))


def primal_and_gradient(primal, scalar, key, primal_output):
    """The FUNCTIONS of an eval whose input is a vector ``x`` and an integer ``key`` (llsq's
    ``n``, ode's ``s``): "primal" replays ``primal(x, key)`` compiled, "gradient" is
    ``tapegrad.func.grad`` of the scalar ``scalar(x, key)``."""
    from . import Function
    gradient = tf.grad(scalar)

    def prepare(inp):
        return f64(inp["x"]), int(inp[key])
    return {"primal": Function(lambda p: compiled(primal, **{key: p[1]})(p[0]), prepare,
                               primal_output),
            "gradient": Function(lambda p: gradient(*p), prepare, tolist)}
