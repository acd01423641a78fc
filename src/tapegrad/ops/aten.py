"""aten-level ops. ``tapegrad.ops.aten`` holds those PyTorch programs call as
``torch.ops.aten.X`` with no public ``torch.X`` (``slice``, ``native_dropout_backward``):
they are registered with no Tensor method and no ``tapegrad.X`` function (``tg.slice``
would shadow Python's builtin on ``import *``). ``constant_pad_nd`` is public
(``torch.constant_pad_nd``).
"""

from __future__ import annotations

import builtins

from ..tensor import Tensor, _check_dim
from . import joining
from ._registry import register

__all__ = ["constant_pad_nd", "native_dropout_backward", "slice"]

_all = builtins.slice(None)


@register("slice", method=False, function=False)
def slice(input, dim=0, start=None, end=None, step=1):  # noqa: A001 - aten's name
    """``input[..., start:end:step, ...]`` at ``dim``, a view (aten's ``slice.Tensor``)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _check_dim(dim, nd, "slice")
    if int(step) <= 0:
        raise RuntimeError(f"slice: slice step must be positive, got {step}")
    return input[(_all,) * d + (builtins.slice(start, end, int(step)),)]


@register("native_dropout_backward", method=False, function=False)
def native_dropout_backward(grad_output, mask, scale):
    """``grad_output * mask * scale``: the gradient of a dropout that kept ``mask``."""
    for name, t in (("grad_output", grad_output), ("mask", mask)):
        if not isinstance(t, Tensor):  # torch's schema takes Tensors only
            raise RuntimeError(
                f"native_dropout_backward: Expected a value of type 'Tensor' for argument "
                f"'{name}' but instead found type '{type(t).__name__}'."
            )
    return grad_output * Tensor._wrap(mask._data.astype(grad_output._data.dtype)) * scale


@register("constant_pad_nd", method=False)
def constant_pad_nd(input, pad, value=0):
    """``pad`` (last dim first, as nn.functional.pad; negative widths crop) with ``value``."""
    return joining.pad(input, tuple(pad), "constant", value)
