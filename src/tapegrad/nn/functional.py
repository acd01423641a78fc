"""``tapegrad.nn.functional``: the layers and losses as functions (PyTorch's signatures).

Argument checking lives here; the arithmetic lives in the fused ops of
``_conv_ops``, ``_pool_ops``, ``_norm_ops``, ``_loss_ops`` and ``_fused``.
"""

from __future__ import annotations

import numpy as np

from .. import _warn
from .._batched import dispatch as _vmap_dispatch
from ..creation import default_generator
from ..ops import _dtype_errors, joining
from ..ops import softmax as _softmax_ops
from ..ops._table import make_inplace
from ..ops.activation import gelu, silu, softplus
from ..ops.elementwise import relu, sigmoid, tanh
from ..tensor import Tensor
from . import _conv_ops, _norm_ops, _pool_ops
from ._conv_ops import Geometry, out_size
from ._fused import check_embedding_indices
from ._fused import embedding as _embedding
from ._fused import linear as _linear
from ._losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)

__all__ = [
    "linear",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "dropout",
    "layer_norm",
    "batch_norm",
    "one_hot",
    "pad",
    "relu",
    "gelu",
    "silu",
    "softplus",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits",
    "embedding",
]


def _tensor(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")
    return x


def _pair(v, op, name):
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(a, int) for a in v):
        return tuple(v)
    if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], (int, np.integer)):
        return (int(v[0]), int(v[0]))  # torch's int[2] repeats a 1-element list
    raise RuntimeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")


def _batched(x, op):
    """(N, C, H, W) view of a 3-D or 4-D input, and whether a batch dim was added."""
    if x.ndim == 4:
        return x, False
    if x.ndim == 3:
        return x.unsqueeze(0), True
    raise RuntimeError(f"{op}: expected a 3-D or 4-D input, got shape {list(x.shape)}")


# -- linear and convolution ---------------------------------------------------------------


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` for input (*, in), weight (out, in), bias (out,)."""
    _tensor(input, "linear")
    _tensor(weight, "linear", "weight")
    if bias is not None:
        _tensor(bias, "linear", "bias")
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"linear: input of shape {list(input.shape)} and weight of shape "
            f"{list(weight.shape)} don't match (need input.shape[-1] == weight.shape[1])"
        )
    try:
        dtype = input._data.dtype  # the check's arguments built only when a dtype differs
        if weight._data.dtype is not dtype or (bias is not None and bias._data.dtype is not dtype):
            _dtype_errors.linear_check(
                input._data, weight._data, None if bias is None else bias._data
            )
        return _linear(input, weight, bias)
    except AttributeError as exc:  # a vmap-batched argument (Note [vmap levels])
        if type(exc).__name__ != "BatchedAccess":
            raise
        return _vmap_dispatch("linear", linear, (input, weight, bias), {})


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C, H, W) with weight (O, C/groups, kh, kw).

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    args = (input, weight, bias, stride, padding, dilation, groups)
    try:
        return _conv2d(*args)
    except AttributeError as exc:  # a vmap-batched argument (Note [vmap levels])
        if type(exc).__name__ != "BatchedAccess":
            raise
        return _vmap_dispatch("conv2d", _conv2d, args, {})


def _conv2d(input, weight, bias, stride, padding, dilation, groups):
    x, added = _batched(_tensor(input, "conv2d"), "conv2d")
    _tensor(weight, "conv2d", "weight")
    if bias is not None:
        _tensor(bias, "conv2d", "bias")
    stride = _pair(stride, "conv2d", "stride")
    dilation = _pair(dilation, "conv2d", "dilation")
    if min(stride) < 1:
        raise RuntimeError(f"conv2d: non-positive stride is not supported, got stride={stride}")
    if min(dilation) < 1:
        raise RuntimeError(f"conv2d: dilation should be greater than zero, but got {dilation}")
    if not isinstance(padding, str) and min(_pair(padding, "conv2d", "padding")) < 0:
        raise RuntimeError(f"conv2d: negative padding is not supported, got padding={padding}")
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: weight must be 4-D, got shape {list(weight.shape)}")
    o, cg, kh, kw = weight.shape
    c = x.shape[1]
    if groups < 1 or c % groups or o % groups or cg * groups != c:
        raise RuntimeError(
            f"conv2d: input with {c} channels, weight of shape {list(weight.shape)} and "
            f"groups={groups} don't match (need C == weight.shape[1] * groups and O % groups == 0)"
        )
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"conv2d: bias must have shape [{o}], got {list(bias.shape)}")
    _dtype_errors.conv_check(x._data, weight._data, None if bias is None else bias._data)
    pads = _conv_pads(padding, (kh, kw), stride, dilation)
    for axis, (n, k) in enumerate(zip(x.shape[2:], (kh, kw), strict=True)):
        if out_size(n, k, stride[axis], dilation[axis], *pads[axis]) < 1:
            raise RuntimeError(
                f"conv2d: input of shape {list(input.shape)} (padded by {pads}) is smaller "
                f"than the dilated kernel {[kh, kw]} (dilation {list(dilation)})"
            )
    out = _conv_ops.conv2d(x, weight, bias, Geometry(stride, pads, dilation, groups))
    return out.squeeze(0) if added else out


def _conv_pads(padding, kernel, stride, dilation):
    if isinstance(padding, str):
        _check_padding_string("conv2d", padding, stride)
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        pads = []
        for k, d in zip(kernel, dilation, strict=True):
            total = d * (k - 1)
            pads.append((total // 2, total - total // 2))  # extra on the right, as PyTorch
        return tuple(pads)
    p = _pair(padding, "conv2d", "padding")  # _conv2d refused a negative one
    return ((p[0], p[0]), (p[1], p[1]))


# -- pooling -------------------------------------------------------------------------------


def _pool_setup(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    """The 2-D case of the pools' geometry (``_pool_nd._setup``), as a conv ``Geometry``."""
    kernel, stride, dilation, out_hw, pads = _pool_nd_setup(  # bound below: a cycle
        op, x, 2, kernel_size, stride, padding, dilation, ceil_mode
    )
    return kernel, out_hw, Geometry(stride, pads, dilation)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Max over windows of (N, C, H, W) or (C, H, W); the gradient goes to each window's
    first maximum. With ``return_indices`` also returns flat H·W indices (int64)."""
    x, added = _batched(_tensor(input, "max_pool2d"), "max_pool2d")
    kernel, out_hw, geom = _pool_setup(
        "max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode
    )
    out, idx = _pool_ops.max_pool2d(x, kernel, out_hw, geom, return_indices)
    if added:
        out = out.squeeze(0)
    if not return_indices:
        return out
    flat = _flat_indices(idx, kernel, x.shape[2:], geom)
    return out, Tensor._wrap(flat[0] if added else flat)


def _flat_indices(idx, kernel, size, geom):
    i, j = np.divmod(idx.astype(np.int64), kernel[1])  # a uint8 idx would wrap in i·dilation
    ho = np.arange(idx.shape[-2])[:, None]
    wo = np.arange(idx.shape[-1])[None, :]
    row = ho * geom.stride[0] + i * geom.dilation[0] - geom.pads[0][0]
    col = wo * geom.stride[1] + j * geom.dilation[1] - geom.pads[1][0]
    return (row * size[1] + col).astype(np.int64)


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over windows; padding counts in the divisor when ``count_include_pad``."""
    x, added = _batched(_tensor(input, "avg_pool2d"), "avg_pool2d")
    kernel, out_hw, geom = _pool_setup("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("avg_pool2d: divisor must be not zero")
        divisor = float(divisor_override)
    else:
        divisor = _pool_ops.avg_divisor(x.shape[2:], kernel, out_hw, geom, count_include_pad)
        divisor = divisor.astype(x.dtype)
    out = _pool_ops.avg_pool2d(x, kernel, out_hw, geom, divisor)
    return out.squeeze(0) if added else out


# -- normalisation and dropout ---------------------------------------------------------------


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Batch normalisation over every dim but 1 (channels).

    In training the batch statistics are used and, when given, ``running_mean`` and
    ``running_var`` are updated in place: ``r = (1 − momentum)·r + momentum·stat``,
    the variance unbiased (n / (n − 1)) as PyTorch. Otherwise the running ones are used.
    """
    x = _tensor(input, "batch_norm")
    c = x.shape[1] if x.ndim >= 2 else 0  # a 1-D input has no channels, as in PyTorch
    axes = (0,) + tuple(range(2, x.ndim))
    view = (1, c) + (1,) * (x.ndim - 2)
    for name, t in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"batch_norm: {name} must have shape [{c}], got {list(t.shape)}")
    if x._data.size == 0:  # nothing to normalise: PyTorch returns a copy
        return x.clone()
    if x.ndim < 2:
        raise IndexError(  # torch's type: its kernel indexes the channel dim 1
            f"batch_norm: expected at least 2-D input, got shape {list(x.shape)}"
        )
    if training:
        count = x._data.size // max(c, 1)
        if count <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{list(x.shape)}"
            )
        out, mean, var = _norm_ops.normalize(x, weight, bias, axes, axes, view, eps)
        if running_mean is not None:
            running_mean._data *= 1.0 - momentum
            running_mean._data += momentum * mean.reshape(c)
            running_mean._vc.bump("batch_norm")
        if running_var is not None:
            running_var._data *= 1.0 - momentum
            running_var._data += (momentum * count / (count - 1)) * var.reshape(c)
            running_var._vc.bump("batch_norm")
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var are needed when not training")
    invstd = Tensor._wrap((1.0 / np.sqrt(running_var._data + eps)).astype(x.dtype, copy=False))
    scale = invstd if weight is None else weight * invstd
    shift = running_mean.detach() * scale
    shift = -shift if bias is None else bias - shift
    return x * scale.reshape(view) + shift.reshape(view)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing dims ``normalized_shape``, then scale and shift."""
    x = _tensor(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(x.shape[x.ndim - k :]) != shape or x.ndim < k:
        raise RuntimeError(
            f"layer_norm: normalized_shape {list(shape)} does not match the trailing dims "
            f"of input of shape {list(x.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"layer_norm: {name} must have shape {list(shape)}")
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    return _norm_ops.normalize(x, weight, bias, axes, lead, shape, eps)[0]


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1/(1 − p).

    The mask comes from ``tg.default_generator``, so ``tg.manual_seed`` fixes it.
    ``inplace=True`` writes the result into ``input`` and returns it (Note [In-place
    activations]); in eval mode or with ``p = 0`` the input itself is returned unchanged.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    x = _tensor(input, "dropout")
    if not training or p == 0.0:
        return x
    if inplace:
        return _dropout_(x, p, training)
    keep = default_generator.numpy.random(x.shape, dtype=np.float32) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    mask = keep.astype(x.dtype) * x.dtype.type(scale)
    return x * Tensor._wrap(mask)


_dropout_ = make_inplace("dropout", dropout)

# -- activations ------------------------------------------------------------------------------


def _softmax_dim(x, dim, name="softmax"):
    if dim is None:  # PyTorch's legacy implicit choice, with its warning
        _warn.warn(
            f"Implicit dimension choice for {name} has been deprecated. Change the call to "
            "include dim=X as an argument."
        )
        return 0 if x.ndim in (0, 1, 3) else 1
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise IndexError(f"softmax: dim {dim} out of range for a tensor of shape {list(x.shape)}")
    return dim % max(x.ndim, 1)


def softmax(input, dim=None, dtype=None):
    """exp(x) / Σ exp(x) along ``dim`` (computed stably)."""
    x = input.to(dtype) if dtype is not None else input
    return _softmax_ops.softmax(x, _softmax_dim(x, dim))


def log_softmax(input, dim=None, dtype=None):
    """log(softmax(x)) along ``dim``, computed as x − logsumexp(x)."""
    x = input.to(dtype) if dtype is not None else input
    return _softmax_ops.log_softmax(x, _softmax_dim(x, dim, "log_softmax"))


# -- shape helpers --------------------------------------------------------------------------


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim (``num_classes=-1``: max + 1)."""
    t = tensor._data
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"one_hot is only applicable to index tensor, got dtype {t.dtype}")
    if t.size and t.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(t.max()) + 1 if t.size else 0
    elif t.size and t.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._wrap((t[..., None] == np.arange(num_classes)).astype(np.int64))


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)``,
    from the last dim backwards (see :func:`tapegrad.ops.joining.pad`)."""
    return joining.pad(_tensor(input, "pad"), pad, mode=mode, value=value)


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` (num_embeddings, dim) at the integer indices ``input``.

    ``max_norm``: the rows looked up whose ``norm_type``-norm exceeds it are first scaled
    down to it, in place in ``weight`` (as torch's ``embedding_renorm_``).
    ``scale_grad_by_freq``: each position's gradient is divided by how often its index
    occurs in ``input``. ``sparse`` is accepted; the gradient stays dense.
    """
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"embedding: indices must be integers, got dtype {idx.dtype}")
    n = weight.shape[0]
    check_embedding_indices(idx, n)
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += n
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    return _embedding(idx, weight, padding_idx, scale_grad_by_freq)


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """torch's ``embedding_renorm_``: rows at ``idx`` with norm > max_norm are scaled by
    ``max_norm / (norm + 1e-7)``, in place, unrecorded (the weight's version changes)."""
    rows = np.unique(idx)
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
        w[rows[big]] *= scale[:, None]
        weight._vc.bump("embedding_renorm_")


# -- losses, distances, dropout variants and sampling (issue 11) ---------------------------
from ._ctc import ctc_loss  # noqa: E402
from ._distance import cosine_similarity, normalize, pairwise_distance, pdist  # noqa: E402
from ._dropout_variants import (  # noqa: E402
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ._grid_sample import affine_grid, grid_sample  # noqa: E402
from ._losses_margin import (  # noqa: E402
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._losses_pointwise import (  # noqa: E402
    binary_cross_entropy,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
)

__all__ += [
    "ctc_loss",
    "alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "affine_grid",
    "grid_sample",
    "cosine_similarity",
    "normalize",
    "pairwise_distance",
    "pdist",
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "binary_cross_entropy",
    "gaussian_nll_loss",
    "huber_loss",
    "kl_div",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
]
# -- issue 11 (layers): attention, ... ------------------------------------------------------
from ._activations import *  # noqa: E402, F403
from ._activations import __all__ as _activation_names  # noqa: E402
from ._attention import scaled_dot_product_attention  # noqa: E402
from ._layers_functional import *  # noqa: E402, F403
from ._layers_functional import __all__ as _layer_names  # noqa: E402
from ._mha import multi_head_attention_forward  # noqa: E402

__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward", *_activation_names]
__all__ += _layer_names
from ._conv_more import check_padding_string as _check_padding_string  # noqa: E402
from ._conv_more import conv1d, conv3d, conv_transpose1d, conv_transpose2d  # noqa: E402

__all__ += ["conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d"]
from ._pool_more import *  # noqa: E402, F403
from ._pool_more import __all__ as _pool_names  # noqa: E402

__all__ += _pool_names
from ._fold import fold, unfold  # noqa: E402
from ._interpolate import interpolate  # noqa: E402

__all__ += ["interpolate", "fold", "unfold"]
# -- issue 10 (nn.functional ops of op_db): 3-D pools, unpooling, ... -----------------------
from ._pool_nd import *  # noqa: E402, F403
from ._pool_nd import __all__ as _pool_nd_names  # noqa: E402
from ._pool_nd import _setup as _pool_nd_setup  # noqa: E402

__all__ += _pool_nd_names
from ._conv_transpose3d import conv_transpose3d  # noqa: E402

__all__ += ["conv_transpose3d"]
from ._functional_misc import *  # noqa: E402, F403
from ._functional_misc import __all__ as _misc_names  # noqa: E402

__all__ += _misc_names
from ._linear_cross_entropy import linear_cross_entropy  # noqa: E402

__all__ += ["linear_cross_entropy"]
from ._pool_fractional import *  # noqa: E402, F403
from ._pool_fractional import __all__ as _fractional_names  # noqa: E402

__all__ += _fractional_names
from ._lp_pool import *  # noqa: E402, F403
from ._lp_pool import __all__ as _lp_pool_names  # noqa: E402

__all__ += _lp_pool_names
from ._pool_with_indices import *  # noqa: E402, F403
from ._pool_with_indices import __all__ as _with_indices_names  # noqa: E402

__all__ += _with_indices_names

# The registered ops re-exported here (relu, tanh, ...) go through the same wrapper as
# tg.<name>: torch-like TypeErrors, and vmap dispatch (Note [vmap levels]).
from ..ops._registry import OPS as _OPS  # noqa: E402
from ..ops._registry import exported as _exported  # noqa: E402
from ..ops._registry import exported_namespace as _exported_namespace  # noqa: E402

for _info in _OPS.values():
    if globals().get(_info.name) is _info.fn:
        globals()[_info.name] = _exported(_info)
_softmax_ops = _exported_namespace(_softmax_ops)
joining = _exported_namespace(joining)
# Fused kernels with a batching rule (_batch_rules_nn.py); the hook costs a call frame.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("cross_entropy", "layer_norm", "max_pool2d", "avg_pool2d", "embedding") + (
    "nll_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "gaussian_nll_loss",
):  # fmt: skip
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
# -- issue 10 (i10m): relu_, elu_, leaky_relu_ ... in place --------------------------------
from ._inplace_functional import *  # noqa: E402, F403
from ._inplace_functional import __all__ as _inplace_names  # noqa: E402
from ._inplace_functional import relu, silu  # noqa: E402, F811 - with ``inplace=``

__all__ += _inplace_names
