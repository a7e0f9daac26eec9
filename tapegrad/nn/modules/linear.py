"""Identity, Linear, Bilinear (torch's parameter names, shapes and default initialisation)."""
import math

import tapegrad as _tg
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


def _factory(device, dtype):
    return {"device": device, "dtype": dtype}


class Identity(Module):
    """Returns its input; ignores its constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, W (out_features, in_features) ~ U(-1/sqrt(in), 1/sqrt(in)) (torch's
    kaiming_uniform_(a=sqrt(5))), b likewise."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        fk = _factory(device, dtype)
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_tg.empty((out_features, in_features), **fk))
        if bias:
            self.bias = Parameter(_tg.empty(out_features, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return _tg.nn.functional.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    pass


class Bilinear(Module):
    """y = x1^T A x2 + b, A (out, in1, in2) ~ U(-1/sqrt(in1), 1/sqrt(in1))."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        fk = _factory(device, dtype)
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_tg.empty((out_features, in1_features, in2_features), **fk))
        if bias:
            self.bias = Parameter(_tg.empty(out_features, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return _tg.nn.functional.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
