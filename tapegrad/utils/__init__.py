"""tapegrad.utils: ``data`` (Dataset, DataLoader, samplers) and ``hooks``."""
from . import hooks  # noqa: F401
