"""Channel-wise dropout (dropout1d/2d/3d) and alpha dropout of ``nn.functional``.

Masks come from ``tg.default_generator`` (``tg.manual_seed`` fixes them); they are
constants multiplied into the input, so the gradient is the mask (and ``b`` adds no
gradient), as in PyTorch. ``inplace=True`` in training writes the result into ``input``
and returns it (:func:`~tapegrad.ops._table.make_inplace`, Note [In-place activations] in
nn/_activations.py); in eval mode or with ``p = 0`` the input itself is returned unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _warn
from ..creation import default_generator
from ..ops._table import make_inplace
from ..tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA = 1.7580993408473766  # -scale * alpha of SELU


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep(shape, p):
    return default_generator.numpy.random(shape, dtype=np.float32) >= p


def _feature_dropout(x, p, training, batched):
    """Zero whole channels: the mask has x's shape with the spatial dims set to 1."""
    if not training or p == 0.0:
        return x
    lead = 2 if batched else 1
    mask_shape = tuple(x.shape[:lead]) + (1,) * (x.ndim - lead)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    mask = _keep(mask_shape, p).astype(x.dtype) * x.dtype.type(scale)
    return x * Tensor._wrap(mask)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p`` (scale 1/(1 − p)).

    Raises:
        RuntimeError: input is not 2-D or 3-D.
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    if inplace and training and p:
        return _dropout1d_(input, p, training)
    return _feature_dropout(input, p, training, input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability ``p``.

    A 3-D input is treated as (N, C, L), as PyTorch does (with its warning).
    """
    _check_p(p)
    if inplace and training and p:
        return _dropout2d_(input, p, training)
    if input.ndim not in (3, 4):
        _warn.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).",
        )
    if input.ndim == 3:
        _warn.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the "
            "1D channel-wise dropout behavior, please switch to using dropout1d instead.",
        )
    return _feature_dropout(input, p, training, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""
    _check_p(p)
    if inplace and training and p:
        return _dropout3d_(input, p, training)
    if input.ndim not in (4, 5):
        _warn.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).",
        )
    return _feature_dropout(input, p, training, input.ndim != 4)


def _alpha(x, p, training, mask_shape):
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = _keep(mask_shape, p).astype(np.float64)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    dtype = x._data.dtype
    return x * Tensor._wrap((keep * a).astype(dtype)) + Tensor._wrap(b.astype(dtype))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance: dropped elements take
    SELU's negative saturation value, then an affine map restores the statistics."""
    _check_p(p)
    if inplace and training and p:
        return _alpha_dropout_(input, p, training)
    return _alpha(input, p, training, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (the mask is shared over the dims after C)."""
    _check_p(p)
    if inplace and training and p:
        return _feature_alpha_dropout_(input, p, training)
    shape = tuple(input.shape[:2]) + (1,) * max(input.ndim - 2, 0)
    return _alpha(input, p, training, shape)


_dropout1d_ = make_inplace("dropout1d", dropout1d)
_dropout2d_ = make_inplace("dropout2d", dropout2d)
_dropout3d_ = make_inplace("dropout3d", dropout3d)
_alpha_dropout_ = make_inplace("alpha_dropout", alpha_dropout)
_feature_alpha_dropout_ = make_inplace("feature_alpha_dropout", feature_alpha_dropout)
