"""tapegrad.nn: ``functional``, ``utils`` (gradient clipping) and ``Parameter``."""
from . import functional  # noqa: F401
from . import utils  # noqa: F401
from .parameter import Parameter  # noqa: F401
