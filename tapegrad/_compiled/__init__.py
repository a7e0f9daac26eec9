"""Layer 1: the compiled code (Numba only). Kernels (``kernels.py``), the generated interpreter
(``_interp.py``, from ``ops.py``), the batched driver (``_driver.py``), native and vector-math
helpers. Imports nothing above ``_schema`` / ``_state``; cached on disk next to the sources.
"""
from . import _cache  # noqa: F401  (first: Numba's cache locators for read-only installations)
