"""Padding modules: Constant/Zero/Reflection/Replication/Circular Pad 1d and 2d."""
import tapegrad as _tg
from .module import Module
from .utils import _pair, _quadruple

__all__ = ["CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d"]


def _pad(input, padding, mode, value=None):
    return _tg.nn.functional.pad(input, padding, mode, value)


class _CircularPadNd(Module):
    def forward(self, input):
        self._check_input_dim(input)
        return _pad(input, self.padding, "circular")

    def extra_repr(self):
        return f"{self.padding}"


class CircularPad1d(_CircularPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class CircularPad2d(_CircularPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)

    def _check_input_dim(self, input):
        if input.dim() != 3 and input.dim() != 4:
            raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _quadruple(padding)


class _ReflectionPadNd(Module):
    __constants__ = ["padding"]

    def forward(self, input):
        return _pad(input, self.padding, "reflect")

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ReflectionPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)


class ReflectionPad2d(_ReflectionPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)


class _ReplicationPadNd(Module):
    __constants__ = ["padding"]

    def forward(self, input):
        return _pad(input, self.padding, "replicate")

    def extra_repr(self):
        return f"{self.padding}"


class ReplicationPad1d(_ReplicationPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)


class ReplicationPad2d(_ReplicationPadNd):
    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
