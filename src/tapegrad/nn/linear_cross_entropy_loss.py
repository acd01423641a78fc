"""``nn.LinearCrossEntropyLoss``: a Linear layer and cross entropy in one module, as torch's
(its weight stored flat in ``self.linear``, reshaped for ``F.linear_cross_entropy``)."""

from __future__ import annotations

import math

from ._linear_cross_entropy import linear_cross_entropy
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``linear(input)`` against ``target``, with torch's signature:
    ``LinearCrossEntropyLoss(in_features, num_classes, *, out_features=(), bias=False,
    device=None, dtype=None, reduction="mean", weight=None, ignore_index=None,
    label_smoothing=0.0, options=None)``. ``self.linear`` holds a
    ``Linear(in_features, num_classes * prod(out_features))`` (torch's parameter names and
    initialisation); forward views its weight as (C, *out_features, in_features).
    """

    def __init__(
        self,
        in_features,
        num_classes,
        *,
        out_features=(),
        bias=False,
        device=None,
        dtype=None,
        reduction="mean",
        weight=None,
        ignore_index=None,
        label_smoothing=0.0,
        options=None,
    ):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        n_out = math.prod(out_features, start=num_classes)
        self.linear = Linear(in_features, n_out, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        linear_weight = self.linear.weight.reshape((*shape, self.linear.in_features))
        bias = self.linear.bias
        return linear_cross_entropy(
            input,
            linear_weight,
            target,
            linear_bias=None if bias is None else bias.reshape(shape),
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features},"
            f" num_classes={self.num_classes},"
            f" out_features={self.out_features},"
            f" bias={self.linear.bias is not None},"
            f" reduction={self.reduction},"
            f" ignore_index={self.ignore_index},"
            f" label_smoothing={self.label_smoothing},"
            f" options={self.options}"
        )
