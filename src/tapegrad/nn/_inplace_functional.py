"""``nn.functional``'s in-place activations (``relu_``, ``elu_``, ``leaky_relu_``...) and the
``inplace=`` argument of ``F.relu`` / ``F.silu``.

Each ``_`` form is the out-of-place functional op written into ``input`` by
:func:`~tapegrad.ops._table.make_inplace` (Note [Generated in-place twins], Note [In-place
activations] in nn/_activations.py): versions, the leaf check, views and the saved-tensor
checks are those of every in-place op. ``F.relu(x, inplace=True)`` is ``x.relu_()``, as in
PyTorch.
"""

from __future__ import annotations

from ..ops._registry import OPS, exported
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

_relu_fn, _relu = OPS["relu"].fn, exported(OPS["relu"])
_silu_fn, _silu = OPS["silu"].fn, exported(OPS["silu"])
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
    except AttributeError:  # a non-Tensor or a vmap-batched input: the exported form's
        return _relu(input)  # TypeError / batching rule (Note [vmap levels])


def silu(input, inplace=False):
    """x·σ(x); with ``inplace=True`` written into ``input``, which is returned."""
    if inplace:
        return _silu_(input)
    try:  # as relu: one call, the exported form only for its errors / vmap
        return _silu_fn(input)
    except AttributeError:
        return _silu(input)
