"""Layer 0: the process's autograd state. Grad modes (no_grad, enable_grad, set_grad_enabled,
inference_mode: thread-local, as in torch) and the anomaly-detection flags. Imports nothing
from the package; ``tapegrad.autograd.grad_mode`` and ``tapegrad.autograd.anomaly`` are the
public faces.

Each grad mode works as a context manager and as a decorator; ``set_grad_enabled(False)`` also
takes effect as a plain call. The previous mode is restored on exit, exceptions included.
"""
import functools
import inspect
import sys
import threading


class _State(threading.local):
    enabled = True     # class default: every new thread starts with grad enabled


STATE = _State()

# anomaly detection (tapegrad.autograd.anomaly): read by the backward sweep
ANOMALY = {"enabled": False, "check_nan": True}


def is_anomaly_enabled():
    return ANOMALY["enabled"]


def is_anomaly_check_nan_enabled():
    return ANOMALY["check_nan"]


def is_grad_enabled():
    return STATE.enabled


class _Mode:
    """Base: a context manager that sets grad mode to ``self._mode`` and restores it."""
    _mode = True

    def __new__(cls, *args, **kwargs):
        # `@torch.no_grad` without parentheses decorates the function directly
        if cls is not set_grad_enabled and len(args) == 1 and callable(args[0]) and not kwargs:
            return cls()(args[0])
        return super().__new__(cls)

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        mode_cls, mode = type(self), self._mode
        if inspect.isgeneratorfunction(fn):
            wrapper = _wrap_generator(fn, mode)
            wrapper.__wrapped_mode__ = mode_cls
            return wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = STATE.enabled
            STATE.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev
        wrapper.__wrapped_mode__ = mode_cls
        return wrapper

    def clone(self):
        return type(self)()


def _wrap_generator(fn, mode):
    """A generator function decorated with a grad mode: every resumption of the generator (its
    start, each ``send`` / ``throw`` / ``close``) runs under the mode, as torch's decorators."""
    def run(step, *args):
        prev = STATE.enabled
        STATE.enabled = mode
        try:
            return step(*args)
        finally:
            STATE.enabled = prev

    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            response = run(gen.send, None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    run(gen.close)
                    raise
                except BaseException:
                    response = run(gen.throw, *sys.exc_info())
                else:
                    response = run(gen.send, request)
        except StopIteration as e:
            return e.value
    return generator_context


class no_grad(_Mode):
    """Disable gradient recording (context manager or decorator)."""
    _mode = False

    def __init__(self, fn=None):
        pass


class enable_grad(_Mode):
    """Enable gradient recording inside a no_grad region."""
    _mode = True

    def __init__(self, fn=None):
        pass


class inference_mode(_Mode):
    """Like no_grad (tapegrad has no separate inference tensors)."""
    def __init__(self, mode=True):
        self._mode = not mode


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` switches grad mode now; as a context manager it restores
    the previous mode on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled(): argument 'mode' must be bool, not %s"
                            % type(mode).__name__)
        self._mode = mode
        self._prev = STATE.enabled
        STATE.enabled = mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        # as a decorator: the mode applies inside the function only (torch restores it here)
        STATE.enabled = self._prev
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled(self._mode)
