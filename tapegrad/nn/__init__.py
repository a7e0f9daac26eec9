"""tapegrad.nn: only ``functional`` so far."""
from . import functional  # noqa: F401
