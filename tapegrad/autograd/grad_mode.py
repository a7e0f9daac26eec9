"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local, as in torch).

Defined in ``tapegrad._state`` (layer 0: every layer reads the mode); this is their public
module, as ``torch.autograd.grad_mode``.
"""
from .._state import (STATE, enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                      set_grad_enabled)
