"""Reverse-mode automatic differentiation: the graph, the engine, and gradient checks."""

from . import functional
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .checkgraph import check_graph, checkable
from .engine import backward, grad
from .function import Function, FunctionCtx
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import AccumulateGrad, Node
from .variable import Variable

__all__ = [
    "backward",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "Node",
    "AccumulateGrad",
    "Function",
    "FunctionCtx",
    "functional",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "check_graph",
    "checkable",
    "Variable",
]
