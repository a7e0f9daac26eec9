"""nn.Parameter: a leaf tensor that requires grad (shares the data it is made from)."""
from ..tensor import Tensor
from ..creation import empty


class Parameter(Tensor):
    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        t = object.__new__(cls)
        t._data = data._arr()
        t._dtype = data._dtype
        if requires_grad and not data._dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._rg = bool(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
