"""``F.linear_cross_entropy`` and ``nn.LinearCrossEntropyOptions``: cross entropy of a linear
projection, ``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

PyTorch's ``options`` select a chunked kernel that never materialises the whole
(N, C) logits; its values and gradients are the reference path's. tapegrad accepts the
options (validated as PyTorch does) and computes the reference path: the full logits.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import _warn
from ..tensor import Tensor
from ._losses import cross_entropy

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]

_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """The chunking options of :func:`linear_cross_entropy`, with PyTorch's fields and checks.

    tapegrad computes the whole logits whatever the options say (see the module docstring).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")


def linear_cross_entropy(
    input,
    linear_weight,
    target,
    *,
    linear_bias=None,
    weight=None,
    reduction="mean",
    ignore_index=None,
    label_smoothing=0.0,
    options=None,
):
    """Cross entropy of ``input @ linear_weightᵀ (+ linear_bias)`` against ``target``.

    Args:
        input: (in_features,) or (N, in_features).
        linear_weight: (C, in_features), or (C, d_1, ..., d_K, in_features) for a
            K-dimensional loss (batched input only).
        target: class indices (), (N) or (N, d_1, ..., d_K), or class probabilities of the
            logits' shape (*N, C, d_1, ..., d_K).
        linear_bias: (C, d_1, ..., d_K) or None.
        weight, reduction, label_smoothing: as :func:`cross_entropy`.
        ignore_index: as :func:`cross_entropy` (None means -100); refused with
            probability targets.
        options: a ``LinearCrossEntropyOptions`` (accepted; the reference path is computed).

    Returns:
        The loss: a scalar, or per sample with ``reduction='none'``.
    """
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}"
        )
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{in_features} and {linear_weight.shape[-1]}, respectively"
        )
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(
            f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}"
        )
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}"
        )
    logits_shape = (*batches, classes, *out_features)
    target_shape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if target_shape == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and not hasattr(options, "batch_chunk_size"):
        raise TypeError(
            "linear_cross_entropy: options must be a LinearCrossEntropyOptions or None, got "
            f"{type(options).__name__}"
        )
    if options is not None and (out_features or label_smoothing != 0.0):
        _warn.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs label_smoothing "
            "== 0 and out_features == ()",
        )
    flat = linear_weight.reshape((math.prod(linear_weight.shape[:-1]), in_features))
    logits = (input @ flat.mT).reshape(logits_shape)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(
        logits,
        target,
        weight=weight,
        ignore_index=-100 if ignore_index is None else ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
