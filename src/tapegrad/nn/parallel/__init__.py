"""``tapegrad.nn.parallel``, as ``torch.nn.parallel``.

``DataParallel`` runs the wrapped module as is: tapegrad has one CPU device, so there is
nothing to scatter (torch does the same when no GPU is visible). Its state dict keys
start with ``module.``, as torch's. ``DistributedDataParallel`` needs process groups
(``tapegrad.distributed``), which are not implemented yet: creating one raises.
"""

from __future__ import annotations

from ..module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """Runs ``module`` on the single CPU device (``device_ids``, ``output_device``, ``dim``
    are accepted and unused)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Raises: needs ``tapegrad.distributed`` process groups, which are not implemented yet."""

    def __init__(self, module, *args, **kwargs):
        raise RuntimeError(
            "DistributedDataParallel: tapegrad.distributed has no process groups yet, so "
            "there is nothing to synchronise gradients with. Train the module directly "
            "(single process), or wrap it in nn.DataParallel, which runs it as is."
        )
