"""torch.utils.data._utils: ``collate`` (default_collate, default_convert)."""
from . import collate  # noqa: F401
