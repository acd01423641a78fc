"""torch's legacy layers that programs still name: NLLLoss2d and CrossMapLRN2d."""

from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from .loss import NLLLoss
from .module import Module

__all__ = ["NLLLoss2d", "CrossMapLRN2d"]


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name; making one warns (FutureWarning) as torch does."""

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
    ):
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
            "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
            "more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


def _cross_map_window(channels, size):
    """The 0/1 matrix W (channels x channels) with scale[c] = sum_j W[c, j]·x[j]² in torch's
    CrossMapLRN2d forward, found by running its running-sum recurrence on indicator rows.

    Note [CrossMapLRN2d window]
    torch's recurrence starts at channels [0, pre_pad) with pre_pad = (size - 1)/2 + 1,
    adds channel c + pre_pad - 1 and drops channel c - pre_pad only when c > pre_pad, so
    channel 0 is never dropped: for size 3 the windows are {0,1}, {0,1,2}, {0,1,2,3},
    {0,2,3,4}, ... (it differs from LocalResponseNorm from channel 2 on). tapegrad
    reproduces that forward exactly. torch's hand-written backward assumes a different
    window, so torch's gradient is not the derivative of its own output (torch's gradcheck
    fails on it); tapegrad's gradient is the derivative (composed ops, gradcheck holds).
    """
    pre_pad = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels))
    w[0, : min(pre_pad, channels)] = 1
    for c in range(1, channels):
        w[c] = w[c - 1]
        if c < channels - pre_pad + 1:
            w[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            w[c, c - pre_pad] -= 1
    return w


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of a 4-D input, torch's legacy
    module: ``x · (k + alpha/size · Σ_window x²)^(-beta)`` (Note [CrossMapLRN2d window]).
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        w = _cross_map_window(input.shape[1], self.size).astype(input.dtype)
        summed = (input * input).movedim(1, -1) @ Tensor._wrap(w.T)
        scale = summed.movedim(-1, 1) * (self.alpha / self.size) + self.k
        return input * scale.pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
