"""``torch.autograd.Variable``: the pre-0.4 wrapper, now an alias of Tensor.

``Variable(t, requires_grad=...)`` returns a new leaf tensor sharing ``t``'s data (as torch),
and ``isinstance(x, Variable)`` holds for every tensor.
"""
import warnings
from ..tensor import Tensor
from ..creation import tensor


def _tensor_cls():
    return Tensor


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _tensor_cls())


class Variable(metaclass=VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: a leaf tensor over ``data``."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            return tensor([])
        if not isinstance(data, _tensor_cls()):
            raise TypeError("Variable data has to be a tensor, but got %s" % type(data).__name__)
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        v = data.detach()
        v.requires_grad = bool(requires_grad)
        return v
