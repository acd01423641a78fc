"""Linear, Identity and Flatten."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtypes
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Linear", "Identity", "Flatten"]


def empty_parameter(shape, dtype=None, device=None):
    """An uninitialised Parameter of ``shape`` (the layer's reset_parameters fills it)."""
    if device not in (None, "cpu"):
        raise NotImplementedError(f"creating parameters on device {device!r}")
    dtype = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
    return Parameter(Tensor._wrap(np.empty(shape, dtype)))


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight (out_features, in_features).

    Initialised as PyTorch: weight ~ kaiming_uniform(a=√5), bias ~ U(±1/√in_features).

    >>> import tapegrad as tg
    >>> tg.nn.Linear(3, 2)(tg.ones(4, 3)).shape
    tapegrad.Size([4, 2])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Flatten dims ``start_dim`` … ``end_dim`` into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        nd = input.ndim
        start = self.start_dim % max(nd, 1)
        end = self.end_dim % max(nd, 1)
        shape = input.shape[:start] + (-1,) + input.shape[end + 1 :]
        if nd == 0:
            shape = (1,)
        return input.reshape(shape)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
