"""tapegrad.nn: ``functional``, ``init``, ``utils`` (gradient clipping) and ``Parameter``."""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from .parameter import Parameter  # noqa: F401
