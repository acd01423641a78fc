"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. (2016), as torch.

The classes split at ``cutoffs`` into a shortlist, scored by the head with one extra
logit per cluster, and clusters, each scored by a low-rank tail (in -> in/div^(i+1) -> size)
times its head logit's probability. Everything is composed of differentiable ops
(linear, log_softmax, gather, index, cat), so gradients and higher derivatives need no
rule of their own.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

import numpy as np

from ..ops.joining import cat
from ..tensor import Tensor
from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive log-softmax over ``n_classes`` classes, split at ``cutoffs``.

    Args:
        in_features: size of each input row.
        n_classes: number of classes.
        cutoffs: increasing class indices in [1, n_classes - 1] where clusters start.
        div_value: the tail of cluster i has hidden size ``in_features // div_value**(i+1)``.
        head_bias: whether the head Linear has a bias.

    ``forward(input, target)`` returns ``(output, loss)``: ``output[i]`` the log-probability
    of ``target[i]``, ``loss`` the mean of ``-output``. ``log_prob(input)`` gives every
    class's log-probability (N, n_classes); ``predict(input)`` the most likely class.

    >>> import tapegrad as tg
    >>> asm = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
    >>> out, loss = asm(tg.randn(3, 8), tg.tensor([0, 5, 9]))
    >>> tuple(out.shape), tuple(asm.log_prob(tg.randn(3, 8)).shape)
    ((3,), (3, 10))
    """

    def __init__(
        self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
        dtype=None,
    ):  # fmt: skip
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hsz, bias=False, **kw),
                    Linear(hsz, osz, bias=False, **kw),
                )
            )

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise RuntimeError(
                    "1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{input_.size()}"
                )
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(
                    "0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{input_.size()}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = (target_._data if isinstance(target_, Tensor) else np.asarray(target_)).reshape(-1)
        # per cluster: its rows and their log-probability within the cluster; the shortlist's
        # rows get 0 there and their own class from the head
        gather_inds = target.copy()
        rows_in_order, pieces = [], []
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            rows = np.flatnonzero((target >= bounds[i]) & (target < bounds[i + 1]))
            if rows.size == 0:
                continue
            rows_in_order.append(rows)
            if i == 0:
                pieces.append(Tensor._wrap(np.zeros(rows.size, input.dtype)))
                continue
            gather_inds[rows] = self.shortlist_size + i - 1
            cluster = F.log_softmax(self.tail[i - 1](input[Tensor._wrap(rows)]), dim=1)
            relative = Tensor._wrap(target[rows] - bounds[i])
            pieces.append(cluster.gather(1, relative.unsqueeze(1)).squeeze(1))
        used = sum(r.size for r in rows_in_order)
        if used != target.size:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min()}, {target.max()}] were found. "
            )
        order = np.concatenate(rows_in_order)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        local = cat(pieces)[Tensor._wrap(inverse)]
        head_logprob = F.log_softmax(self.head(input), dim=1)
        head = head_logprob.gather(1, Tensor._wrap(gather_inds).unsqueeze(1)).squeeze(1)
        output = local + head
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of all ``n_classes`` classes: (N, in_features) -> (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (N,), as ``log_prob(input).argmax(1)`` but
        scoring the clusters only for rows whose best head logit is a cluster's."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        if not_in_shortlist.all():
            return self._get_full_log_prob(input, head_output).argmax(dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        output[not_in_shortlist] = log_prob.argmax(dim=1)
        return output
