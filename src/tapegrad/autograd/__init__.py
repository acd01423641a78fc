"""Reverse-mode automatic differentiation: the graph, the engine, and gradient checks."""

from . import anomaly_mode, forward_ad, functional, grad_mode, profiler
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .checkgraph import check_graph, checkable
from .engine import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
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
    "forward_ad",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "check_graph",
    "checkable",
    "Variable",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_multithreading_enabled",
    "set_multithreading_enabled",
    "grad_mode",
    "anomaly_mode",
    "profiler",
]
