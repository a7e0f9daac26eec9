"""nn.Parameter: a leaf tensor that requires grad (shares the data it is made from)."""
from ..tensor import Tensor
from ..creation import empty

__all__ = ["Parameter"]


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

    def __deepcopy__(self, memo):
        # a Parameter copies as a Parameter (copy.deepcopy(model)), without .grad,
        # as torch's Parameter.__deepcopy__
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.data, self.requires_grad))

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)
