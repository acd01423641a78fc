"""aten's normalisation ops with their saved statistics: ``native_layer_norm``,
``native_batch_norm``, ``native_group_norm`` return ``(out, mean, rstd)`` as PyTorch's do.

``out`` is the functional op's (nn.functional), so its gradient is that op's. The statistics
of layer and batch norm are constants, as in PyTorch (they do not require grad); those of
group norm are differentiable in PyTorch, so they are composed of tapegrad ops here.
"""

from __future__ import annotations

import numpy as np

from ..ops._registry import register
from ..tensor import Tensor
from . import functional as F

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm"]


def _stats(data, axes, eps):
    mean = data.mean(axis=axes, keepdims=True)
    var = np.mean((data - mean) ** 2, axis=axes, keepdims=True)
    return mean, 1.0 / np.sqrt(var + eps)


@register("native_layer_norm", method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(layer_norm(...), mean, rstd)``; ``mean`` and ``rstd`` have ``input``'s leading
    dims followed by ones for the normalised dims."""
    shape = tuple(normalized_shape)
    out = F.layer_norm(input, shape, weight, bias, eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    mean, rstd = _stats(input._data, axes, eps)
    return out, Tensor._wrap(mean), Tensor._wrap(rstd)


@register("native_batch_norm", method=False)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(batch_norm(...), save_mean, save_invstd)``: the batch statistics (shape ``(C,)``)
    in training, empty tensors otherwise; running statistics are updated as batch_norm's."""
    if input.ndim < 2 or input._data.size == 0:
        raise RuntimeError(
            "native_batch_norm: expected an input of at least 2 dims with at least one "
            f"element, got input_sizes = {list(input.shape)}"
        )
    if training:
        axes = (0,) + tuple(range(2, input.ndim))
        mean, rstd = (a.reshape(-1) for a in _stats(input._data, axes, eps))
    else:
        mean = rstd = np.zeros(0, input._data.dtype)
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, Tensor._wrap(mean), Tensor._wrap(rstd)


@register("native_group_norm", method=False)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(group_norm(...), mean, rstd)`` with statistics of shape ``(N, group)``, all
    composed of differentiable ops (PyTorch's statistics are differentiable too)."""
    if tuple(input.shape[:2]) != (N, C) or int(np.prod(input.shape[2:])) != HxW:
        raise RuntimeError(
            f"native_group_norm: input of shape {list(input.shape)} does not match N={N}, "
            f"C={C}, HxW={HxW}"
        )
    if C % group:
        raise RuntimeError(
            f"native_group_norm: expected the number of channels C={C} to be divisible by "
            f"group={group}"
        )
    grouped = input.reshape(N, group, C // group * HxW)
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, unbiased=False) + eps).rsqrt()
    out = ((grouped - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input.shape)
    channel = (C,) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(channel)
    if bias is not None:
        out = out + bias.reshape(channel)
    return out, mean, rstd
