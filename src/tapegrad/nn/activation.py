"""Activation modules: ReLU, GELU, SiLU, Softplus, Sigmoid, Tanh, Softmax, LogSoftmax."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["ReLU", "GELU", "SiLU", "Softplus", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"]


class ReLU(Module):
    """max(x, 0); with ``inplace=True`` the input is overwritten and returned (``relu_``)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        if self.inplace:
            return input.relu_()
        return F.relu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x·Φ(x) (``approximate='tanh'`` for the tanh formula)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x·σ(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """log(1 + e^(βx)) / β, linear above ``threshold`` (as PyTorch)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, beta=self.beta, threshold=self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Sigmoid(Module):
    """1 / (1 + e^−x)."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """tanh x."""

    def forward(self, input):
        return F.tanh(input)


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
