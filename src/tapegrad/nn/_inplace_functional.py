"""``nn.functional``'s in-place activations (``relu_``, ``elu_``, ``leaky_relu_``...) and the
``inplace=`` argument of ``F.relu`` / ``F.silu``.

Each ``_`` form is the out-of-place functional op written into ``input`` by
:func:`~tapegrad.ops._table.make_inplace` (Note [Generated in-place twins], Note [In-place
activations] in nn/_activations.py): versions, the leaf check, views and the saved-tensor
checks are those of every in-place op. ``F.relu(x, inplace=True)`` is ``x.relu_()``, as in
PyTorch.
"""

from __future__ import annotations

from ..ops._registry import OPS, VMAP_DISPATCH, exported
from ..ops._table import make_inplace
from ..ops.activation import silu as _silu_op
from ._activations import (
    celu_,
    elu_,
    hardtanh_,
    leaky_relu_,
    rrelu_,
    selu_,
    threshold_,
)

__all__ = ["relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_"]

_RELU, _SILU = OPS["relu"], OPS["silu"]
_relu_fn, _relu = _RELU.fn, exported(_RELU)
_silu_fn, _silu = _SILU.fn, exported(_SILU)
_silu_ = make_inplace("silu", _silu_op)


def relu_(input):
    """``input.relu_()``: max(x, 0) in place; returns ``input``."""
    return input.relu_()


def relu(input, inplace=False):
    """max(x, 0); with ``inplace=True`` written into ``input``, which is returned."""
    if inplace:
        return input.relu_()
    try:  # the registered op itself: F.relu costs one call, as tg.relu
        return _relu_fn(input)
    except AttributeError as exc:  # a non-Tensor or a vmap-batched input: the exported
        if type(exc).__name__ == "BatchedAccess":  # form's TypeError / batching rule
            return VMAP_DISPATCH[0](_RELU, (input,), {})  # (Note [vmap levels])
        return _relu(input)


def silu(input, inplace=False):
    """x·σ(x); with ``inplace=True`` written into ``input``, which is returned."""
    if inplace:
        return _silu_(input)
    try:  # as relu: one call, the exported form only for its errors / vmap
        return _silu_fn(input)
    except AttributeError as exc:
        if type(exc).__name__ == "BatchedAccess":
            return VMAP_DISPATCH[0](_SILU, (input,), {})
        return _silu(input)
