"""ChannelShuffle, as torch."""

from __future__ import annotations

from ._functional_misc import channel_shuffle
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) across ``groups`` groups (ShuffleNet).

    >>> import tapegrad as tg
    >>> tg.nn.ChannelShuffle(2)(tg.arange(4.0).reshape(1, 4, 1)).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
