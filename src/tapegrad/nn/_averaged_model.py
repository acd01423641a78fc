"""``AveragedModel`` and ``update_bn`` (torch.optim.swa_utils' module-side half).

They live in nn because ``AveragedModel`` is a Module and optim sits below nn (see
Note [swa_utils across layers] in optim/swa_utils.py); ``tg.optim.swa_utils`` re-exports them.
"""

from __future__ import annotations

import itertools
from copy import deepcopy

import numpy as np

from ..grad_mode import no_grad
from ..tensor import Tensor
from .module import Module
from .normalization import _BatchNorm

__all__ = ["AveragedModel", "update_bn"]


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are a running average (SWA, or EMA with an avg fn).

    Args:
        model: the module to average (deep-copied).
        device: where the copy lives (optional).
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> new averaged``, per tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)``, in place,
            called once per (device, dtype) group (e.g. ``get_ema_multi_avg_fn(0.999)``).
        use_buffers: average the buffers too (otherwise they are copied from ``model``).

    The first ``update_parameters`` copies ``model``'s values; later ones average. Without
    ``avg_fn``/``multi_avg_fn`` the average is equal-weighted, as torch's on the CPU:
    ``avg + (current - avg) / (n_averaged + 1)``.

    >>> import tapegrad as tg
    >>> net = tg.nn.Linear(2, 1)
    >>> swa = AveragedModel(net)
    >>> swa.update_parameters(net); int(swa.n_averaged)
    1
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", Tensor._wrap(np.zeros((), np.int64)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model) -> None:
        """Fold in ``model``'s parameters (and buffers, with ``use_buffers``)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged) == 0
        with no_grad():
            for p_avg, p_model in zip(mine, theirs, strict=False):
                p_model_ = p_model.detach().to(p_avg.device)
                averaged.append(p_avg.detach())
                current.append(p_model_)
                if first:
                    p_avg.detach().copy_(p_model_)
            if not first:
                self._average(averaged, current)
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1

    def _average(self, averaged: list, current: list) -> None:
        if self.avg_fn is not None:
            for p_avg, p_model in zip(averaged, current, strict=True):
                p_avg.copy_(self.avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
            return
        groups: dict = {}
        for p_avg, p_model in zip(averaged, current, strict=True):
            key = (str(p_avg.device), p_avg.dtype)
            groups.setdefault(key, ([], []))
            groups[key][0].append(p_avg)
            groups[key][1].append(p_model)
        for (device, _), (avg_list, cur_list) in groups.items():
            n = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(avg_list, cur_list, n)
            else:
                for p_avg, p_model in zip(avg_list, cur_list, strict=True):
                    p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))


def update_bn(loader, model, device=None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over ``loader``.

    The statistics are reset and then averaged cumulatively (``momentum=None``) over the
    batches; a batch that is a list or tuple feeds its first element to ``model``. The
    model's training flag and the momenta are restored afterwards.
    """
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)
