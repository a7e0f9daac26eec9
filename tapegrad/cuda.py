"""torch.cuda for a CPU-only library: scripts probing for a GPU see none.

``is_available()`` is False and ``device_count()`` 0; seeding calls are no-ops (as torch's are
without CUDA); calls that need a device raise torch's AssertionError."""

_NO_CUDA = "Torch not compiled with CUDA enabled"


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """No-op (no CUDA generators)."""


def manual_seed_all(seed):
    """No-op (no CUDA generators)."""


def seed():
    """No-op (no CUDA generators)."""


def seed_all():
    """No-op (no CUDA generators)."""


def empty_cache():
    """No-op (no CUDA memory)."""


def _unavailable(*args, **kwargs):
    raise AssertionError(_NO_CUDA)


init = current_device = get_device_name = get_device_properties = set_device = _unavailable
synchronize = get_device_capability = memory_allocated = max_memory_allocated = _unavailable
memory_reserved = reset_peak_memory_stats = _unavailable
