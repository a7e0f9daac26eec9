"""Layer 8: Tensor methods that live with their families, attached to the class in one place.

The class in ``tensor.py`` holds storage, dtype, views and version counters only; a method that
records or runs an op is defined in its family (``class TensorMethods`` / ``TensorOperators``
there, written as in a class body) and attached here, once: ``attach`` refuses a name the class
already has.
"""
from . import _format, _index, _math, _matrix, _record, _reduce, _shape, creation
from .autograd import engine, graph
from .tensor import Tensor, _LegacyType

# the holders, in the order their methods are attached
HOLDERS = (_record.TensorMethods, _shape.TensorMethods, _index.TensorMethods, _math.TensorMethods,
           _math.TensorOperators, creation.TensorMethods, _reduce.TensorMethods,
           _matrix.TensorMethods, graph.TensorMethods, engine.TensorMethods,
           _format.TensorMethods)

_CLASS_ONLY = frozenset(("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"))


def table():
    """{name: attribute} of every method the holders define (a name defined twice raises)."""
    out = {}
    for h in HOLDERS:
        for name, value in vars(h).items():
            if name in _CLASS_ONLY:
                continue
            if name in out:
                raise RuntimeError("Tensor.%s is defined by two holders" % name)
            out[name] = value
    return out


def attach():
    for name, value in table().items():
        if name in vars(Tensor):
            raise RuntimeError("Tensor.%s is set twice" % name)
        setattr(Tensor, name, value)
    # the legacy tensor types (torch.FloatTensor ...) construct through creation
    for name, value in vars(creation.LegacyTypeMethods).items():
        if name not in _CLASS_ONLY:
            setattr(_LegacyType, name, value)


attach()
