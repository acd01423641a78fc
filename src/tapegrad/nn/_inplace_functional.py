"""``nn.functional``'s in-place activations (``relu_``, ``elu_``, ``leaky_relu_``...): the
out-of-place functional op written into ``input`` by :func:`~tapegrad.ops._table.make_inplace`
(Note [Generated in-place twins]): versions, the leaf check and views as every in-place op."""

from __future__ import annotations

from ..ops._table import make_inplace
from . import _activations

__all__ = ["relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_"]


def relu_(input):
    """``input.relu_()``: max(x, 0) in place; returns ``input``."""
    return input.relu_()


elu_ = make_inplace("elu", _activations.elu)
celu_ = make_inplace("celu", _activations.celu)
selu_ = make_inplace("selu", _activations.selu)
leaky_relu_ = make_inplace("leaky_relu", _activations.leaky_relu)
hardtanh_ = make_inplace("hardtanh", _activations.hardtanh)
threshold_ = make_inplace("threshold", _activations.threshold)
rrelu_ = make_inplace("rrelu", _activations.rrelu)
