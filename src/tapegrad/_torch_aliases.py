"""torch's top-level copies of functional ops: ``torch.dropout(x, p, train)``,
``torch.embedding(weight, indices)``, ``torch.layer_norm(x, shape)``, ``torch.conv2d``...

Note [Top-level functional aliases]
torch exports many ``nn.functional`` ops a second time at the top level, with the ATen
schema's signature rather than ``F``'s: ``torch.dropout(input, p, train)`` needs ``train``
(positionally or by name), ``torch.embedding`` takes the *weight* first, losses take an int
``reduction`` (0 none, 1 mean, 2 sum), pooling's ``stride=[]`` means "the kernel size",
``torch.adaptive_max_pool1d`` returns ``(values, indices)``. Each row below is one such
name: a function whose parameters ARE torch's schema (names, order and defaults, checked
against ``torch._C._jit_get_schemas_for_operator`` in tests/test_torch_aliases.py) and
whose body calls the ``nn.functional`` op that does the work. No math lives here.
"""

from __future__ import annotations

import functools

import numpy as np

from .nn import functional as F
from .nn._dropout_variants import _feature_dropout
from .ops._table import make_inplace
from .tensor import Tensor

# NOTE: the schemas say ``int reduction=1`` (mean), but torch's Python binding reads that
# default as 0: ``torch.kl_div(x, t)`` and ``torch.margin_ranking_loss(a, b, y)`` are
# elementwise (torch 2.13). The rows keep what torch does, not what the schema prints.
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op, r):
    """ATen's int reduction as ``F``'s string."""
    if isinstance(r, str):  # F's spelling works too, as it does nowhere in torch: be strict
        raise TypeError(f"{op}(): argument 'reduction' must be int (0, 1 or 2), not str")
    if r not in (0, 1, 2):
        raise ValueError(f"{op}(): {r} is not a valid value for reduction")
    return _REDUCTIONS[r]


def _p(p):
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def _stride(stride):
    """Pooling's ``stride=[]`` (the schema's default) means the kernel size, as F's None."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def _no(op, what):
    raise NotImplementedError(f"{op}: {what} is not supported by tapegrad")


def _feature_dropout_op(input, p, train):
    if input.ndim < 2:
        raise RuntimeError(
            "Feature dropout requires at least 2 dimensions in the input"
        )  # torch's text
    return _feature_dropout(input, _p(p), train, True)


_feature_dropout_inplace = make_inplace("feature_dropout", _feature_dropout_op)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if scale_grad_by_freq:
        _no("embedding", "scale_grad_by_freq=True")
    if sparse:
        _no("embedding", "sparse=True (sparse gradients)")
    # ATen's padding_idx is already non-negative; -1 means "none" (F maps negatives first)
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx)


def _embedding_renorm_(self, indices, max_norm, norm_type):
    """Rows of ``weight`` at ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` scaled
    to ``max_norm / (norm + 1e-7)``, in place, with no graph (as ATen's renorm)."""
    weight = self
    from .grad_mode import no_grad

    if indices.dtype.kind not in "iu":
        raise RuntimeError(
            f"embedding_renorm_: Expected tensor for argument #2 'indices' to have one of the "
            f"following scalar types: Long, Int; but got {indices.dtype} instead"
        )
    with no_grad():
        rows = indices.flatten().unique()
        sel = weight[rows]
        norm = sel.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norm + 1e-7)).where(norm > max_norm, 1.0)
        weight[rows] = sel * scale.to(weight.dtype)
    return weight


def _embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """``(output, offset2bag, bag_size, max_indices)`` as ATen's CPU kernel: the output is
    ``F.embedding_bag``'s; the three int64 bookkeeping tensors are computed here from the
    indices (``offset2bag`` is empty for a plain sum of non-float64 weights; ``max_indices``
    holds ``bag_size`` for a mean and the arg-max row per column for a max)."""
    if mode not in (0, 1, 2):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode}")
    out = F.embedding_bag(
        indices, weight, offsets, None, 2, scale_grad_by_freq, ("sum", "mean", "max")[mode],
        sparse, per_sample_weights, include_last_offset, padding_idx,
    )  # fmt: skip
    idx, off = indices._data.reshape(-1), offsets._data.reshape(-1)
    n_bags = len(off) - 1 if include_last_offset else len(off)
    bag = np.searchsorted(off, np.arange(len(idx)), side="right") - 1
    bag = np.clip(bag, 0, max(n_bags - 1, 0)).astype(np.int64)
    pad = None if padding_idx is None else padding_idx % weight.shape[0]
    keep = idx != pad if pad is not None else np.ones(len(idx), dtype=bool)
    size = np.bincount(bag[keep], minlength=n_bags).astype(np.int64)
    if mode == 0:  # ATen's fast path (weights other than float64, no padding) skips it
        o2b = bag if pad is not None or weight.dtype == np.float64 else np.zeros(0, np.int64)
        size = np.zeros(n_bags, np.int64)
        most = np.zeros(n_bags, np.int64)
    elif mode == 1:
        o2b, most = bag, size.copy()
    else:
        o2b, most, w = bag, np.zeros((n_bags, weight.shape[1]), np.int64), weight._data
        for b in range(n_bags):
            rows = idx[(bag == b) & keep]
            if len(rows):
                most[b] = rows[np.argmax(w[rows], axis=0)]
    return (out, *(Tensor._wrap(a) for a in (o2b, size, most)))


def _pool_with_indices(pool):
    def call(self, kernel_size, stride, padding, dilation, ceil_mode):
        return pool(self, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)

    return call


# name -> a function with torch's own signature whose body calls the F op (see the Note)
_ROWS = {
    # -- convolution ------------------------------------------------------------------------
    "conv1d": lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: F.conv1d(
        input, weight, bias, stride, padding, dilation, groups
    ),
    "conv2d": lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: F.conv2d(
        input, weight, bias, stride, padding, dilation, groups
    ),
    "conv3d": lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: F.conv3d(
        input, weight, bias, stride, padding, dilation, groups
    ),
    "conv_transpose1d": lambda input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1: (  # noqa: E501
        F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    ),
    "conv_transpose2d": lambda input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1: (  # noqa: E501
        F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    ),
    "conv_transpose3d": lambda input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1: (  # noqa: E501
        F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    ),
    "convolution": lambda input, weight, bias, stride, padding, dilation, transposed, output_padding, groups: (  # noqa: E501
        _convolution(
            input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
        )
    ),
    # -- pooling ----------------------------------------------------------------------------
    "avg_pool1d": lambda self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True: (  # noqa: E501
        F.avg_pool1d(self, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)
    ),
    "max_pool1d": lambda self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False: (
        F.max_pool1d(self, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    ),
    "max_pool2d": lambda self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False: (
        F.max_pool2d(self, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    ),
    "max_pool3d": lambda self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False: (
        F.max_pool3d(self, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    ),
    "max_pool1d_with_indices": lambda self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False: (  # noqa: E501
        _pool_with_indices(F.max_pool1d)(self, kernel_size, stride, padding, dilation, ceil_mode)
    ),
    "adaptive_avg_pool1d": lambda self, output_size: F.adaptive_avg_pool1d(self, output_size),
    "adaptive_max_pool1d": lambda self, output_size: F.adaptive_max_pool1d(
        self, output_size, return_indices=True
    ),
    # -- normalisation ----------------------------------------------------------------------
    "batch_norm": lambda input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled: (  # noqa: E501
        F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    ),
    "instance_norm": lambda input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled: (  # noqa: E501
        F.instance_norm(
            input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
        )
    ),
    "layer_norm": lambda input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True: (  # noqa: E501
        F.layer_norm(input, normalized_shape, weight, bias, eps)
    ),
    "group_norm": lambda input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True: (
        F.group_norm(input, num_groups, weight, bias, eps)
    ),
    "rms_norm": lambda input, normalized_shape, weight=None, eps=None: F.rms_norm(
        input, normalized_shape, weight, eps
    ),
    # -- dropout (train is required, as in the schema) --------------------------------------
    "dropout": lambda input, p, train: F.dropout(input, _p(p), train),
    "dropout_": lambda self, p, train: F.dropout(self, _p(p), train, True),
    "alpha_dropout": lambda input, p, train: F.alpha_dropout(input, _p(p), train),
    "alpha_dropout_": lambda self, p, train: F.alpha_dropout(self, _p(p), train, True),
    "feature_dropout": lambda input, p, train: _feature_dropout_op(input, p, train),
    "feature_dropout_": lambda self, p, train: (
        _feature_dropout_inplace(self, p, train) if _p(p) and train else self
    ),
    "feature_alpha_dropout": lambda input, p, train: F.feature_alpha_dropout(input, _p(p), train),
    "feature_alpha_dropout_": lambda self, p, train: F.feature_alpha_dropout(
        self, _p(p), train, True
    ),
    "native_dropout": lambda input, p, train: _native_dropout(input, p, train),
    # -- embeddings ---------------------------------------------------------------------------
    "embedding": _embedding,
    "embedding_renorm_": _embedding_renorm_,
    "embedding_bag": _embedding_bag,
    # -- layers, distances, activations -----------------------------------------------------
    "bilinear": lambda input1, input2, weight, bias=None: F.bilinear(input1, input2, weight, bias),
    "cosine_similarity": lambda x1, x2, dim=1, eps=1e-08: F.cosine_similarity(x1, x2, dim, eps),
    "pairwise_distance": lambda x1, x2, p=2.0, eps=1e-06, keepdim=False: F.pairwise_distance(
        x1, x2, p, eps, keepdim
    ),
    "pdist": lambda self, p=2.0: F.pdist(self, p),
    "pixel_shuffle": lambda self, upscale_factor: F.pixel_shuffle(self, upscale_factor),
    "pixel_unshuffle": lambda self, downscale_factor: F.pixel_unshuffle(self, downscale_factor),
    "native_channel_shuffle": lambda self, groups: F.channel_shuffle(self, groups),
    "prelu": lambda self, weight: F.prelu(self, weight),
    "rrelu": lambda self, lower=0.125, upper=1.0 / 3, training=False, generator=None: (
        F.rrelu(self, lower, upper, training) if generator is None else _no("rrelu", "generator")
    ),
    "rrelu_": lambda self, lower=0.125, upper=1.0 / 3, training=False, generator=None: (
        F.rrelu_(self, lower, upper, training) if generator is None else _no("rrelu_", "generator")
    ),
    "celu_": lambda self, alpha=1.0: F.celu_(self, alpha),
    "selu_": lambda self: F.selu_(self),
    "threshold_": lambda self, threshold, value: F.threshold_(self, threshold, value),
    # -- losses (reduction is ATen's int) ---------------------------------------------------
    "binary_cross_entropy_with_logits": lambda self, target, weight=None, pos_weight=None, reduction=0: (  # noqa: E501
        F.binary_cross_entropy_with_logits(
            self,
            target,
            weight,
            reduction=_reduction("binary_cross_entropy_with_logits", reduction),
            pos_weight=pos_weight,
        )
    ),
    "kl_div": lambda self, target, reduction=0, *, log_target=False: (
        F.kl_div(self, target, reduction=_reduction("kl_div", reduction), log_target=log_target)
        if reduction != 1
        else F.kl_div(self, target, reduction="sum", log_target=log_target) / self.numel()
    ),
    "margin_ranking_loss": lambda input1, input2, target, margin=0.0, reduction=0: (
        F.margin_ranking_loss(
            input1, input2, target, margin, reduction=_reduction("margin_ranking_loss", reduction)
        )
    ),
    "hinge_embedding_loss": lambda self, target, margin=1.0, reduction=0: F.hinge_embedding_loss(
        self, target, margin, reduction=_reduction("hinge_embedding_loss", reduction)
    ),
    "poisson_nll_loss": lambda input, target, log_input, full, eps, reduction: F.poisson_nll_loss(
        input,
        target,
        log_input,
        full,
        eps=eps,
        reduction=_reduction("poisson_nll_loss", reduction),
    ),
    "triplet_margin_loss": lambda anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0: (  # noqa: E501
        F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin,
            p,
            eps,
            swap,
            reduction=_reduction("triplet_margin_loss", reduction),
        )
    ),
    "cosine_embedding_loss": lambda input1, input2, target, margin=0.0, reduction=0: (
        F.cosine_embedding_loss(
            input1, input2, target, margin, reduction=_reduction("cosine_embedding_loss", reduction)
        )
    ),
    "ctc_loss": lambda log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False: (  # noqa: E501
        F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            blank,
            _reduction("ctc_loss", reduction),
            zero_infinity,
        )
    ),
}


def _convolution(
    input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    """ATen's generic convolution: the spatial rank is the weight's ndim - 2."""
    rank = weight.ndim - 2
    if rank not in (1, 2, 3):
        raise RuntimeError(
            f"convolution: expected a 3-D, 4-D or 5-D weight, got {weight.ndim}-D "
            f"(shape {tuple(weight.shape)})"
        )
    if transposed:
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[rank - 1]
        return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)
    conv = (F.conv1d, F.conv2d, F.conv3d)[rank - 1]
    return conv(input, weight, bias, stride, padding, dilation, groups)


def _native_dropout(input, p, train):
    """``(output, mask)``. The mask is F.dropout of ones (its generator and scale), so the
    output is ``input * mask / (1 - p)`` as torch's; when not training, ``(input, all True)``."""
    if train is None or train:
        scaled = F.dropout(input.detach().new_ones(input.shape), _p(p), True)
        return input * scaled, scaled != 0
    return input.clone(), input.detach().new_ones(input.shape, dtype=bool)


def _named(name, fn):
    """``fn`` under torch's name, refusing a non-Tensor first argument with torch's TypeError
    (the F ops read ``input._data`` unchecked); ``inspect.signature`` shows ``fn``'s."""
    if fn.__name__ == "<lambda>":  # Python's own argument errors then name the op
        fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)
    fn.__name__ = fn.__qualname__ = name
    first = fn.__code__.co_varnames[0]

    def function(*args, **kwargs):
        if args or first in kwargs:
            t = args[0] if args else kwargs[first]
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"{name}(): argument '{first}' (position 1) must be Tensor, "
                    f"not {type(t).__name__}"
                )
        return fn(*args, **kwargs)

    functools.update_wrapper(function, fn)
    function.__module__ = "tapegrad"
    if function.__doc__ is None:
        function.__doc__ = (
            f"``torch.{name}``: torch's top-level form (Note [Top-level functional aliases])."
        )
    return function


FUNCTIONS = {name: _named(name, fn) for name, fn in _ROWS.items()}
NAMES = tuple(FUNCTIONS)
__all__ = list(NAMES)
