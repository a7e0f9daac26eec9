"""Anomaly detection: ``set_detect_anomaly(True)`` / ``detect_anomaly()``.

When on, a backward pass runs the compiled sweep one entry at a time and checks the
gradients each entry produced; a NaN raises torch's "Function 'XBackward0' returned nan
values in its 0th output." naming the forward op. Slower, for debugging only.
"""
from .._state import ANOMALY as _STATE, is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401


class set_detect_anomaly:
    """Switch anomaly detection on or off (now, and as a context manager until exit)."""

    def __init__(self, mode, check_nan=True):
        self.prev = dict(_STATE)
        _STATE["enabled"], _STATE["check_nan"] = bool(mode), bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _STATE.update(self.prev)
        return False


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = dict(_STATE)
        _STATE["enabled"], _STATE["check_nan"] = True, self.check_nan

    def __exit__(self, *exc):
        _STATE.update(self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return wrapper
