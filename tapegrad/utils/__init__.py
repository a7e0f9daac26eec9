"""tapegrad.utils: ``data`` (Dataset, DataLoader, samplers) and ``hooks``."""
from . import hooks  # noqa: F401
from . import data  # noqa: F401
