"""tapegrad.nn: ``functional`` and ``Parameter``."""
from . import functional  # noqa: F401
from .parameter import Parameter  # noqa: F401
