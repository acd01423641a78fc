"""SyncBatchNorm: batch norm whose statistics would be reduced over a process group.

In one process it is BatchNorm over any input of 2 or more dims, as torch's on CPU
without a process group. Like torch, it refuses to train on CPU tensors once
``tapegrad.distributed`` is initialised (torch syncs on accelerators only), so
statistics are never silently left unsynchronised.
"""

from __future__ import annotations

from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """``SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats,
    process_group=None)``: BatchNorm1d/2d/3d in one process.

    >>> import tapegrad as tg
    >>> tg.nn.SyncBatchNorm(3)(tg.randn(4, 3, 5)).shape
    tapegrad.Size([4, 3, 5])
    """

    _expected_dims = range(2, 64)  # any rank from 2 (checked in forward, torch's message)

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        from .. import distributed  # noqa: PLC0415 - distributed sits above nn

        if self.training and distributed.is_initialized() and input.device.type == "cpu":
            raise ValueError(
                "SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone"
            )
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch norm in it replaced by a SyncBatchNorm that shares
        its parameters and buffers (the module itself if it is one); returns it."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if "qconfig" in module.__dict__:
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
