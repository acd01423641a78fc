"""``tapegrad.utils.tensorboard``: importable so scripts load; writing events is not supported."""

from __future__ import annotations

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Raises when created: tapegrad has no TensorBoard event writer."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "torch.utils.tensorboard.SummaryWriter is not available in tapegrad (it would need "
            "the tensorboard package and protobuf event files). Log scalars with print() or a "
            "CSV file, or use the tensorboardX package's SummaryWriter with plain floats "
            "(loss.item())."
        )
