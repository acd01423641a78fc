"""``tapegrad.nn.parallel``: DistributedDataParallel (also ``DDP``) and DataParallel.

DataParallel splits work across GPUs in torch; on tapegrad's CPU device it runs the
module as it is, so scripts that wrap their model in it keep working.
"""

from ..module import Module
from .distributed import DistributedDataParallel

DDP = DistributedDataParallel


class DataParallel(Module):
    """Runs ``module`` unchanged (one CPU device); ``.module`` is the wrapped model."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


__all__ = ["DistributedDataParallel", "DDP", "DataParallel"]
