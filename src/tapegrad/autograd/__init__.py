"""Reverse-mode automatic differentiation: the graph, the engine, and gradient checks."""

from .engine import backward, grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import AccumulateGrad, Node

__all__ = [
    "backward",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "Node",
    "AccumulateGrad",
]
