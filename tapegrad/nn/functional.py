"""The part of torch.nn.functional the foundation needs; compositions of tensor ops."""
from ..tensor import relu, sigmoid, tanh  # noqa: F401

__all__ = ["relu", "sigmoid", "tanh"]
