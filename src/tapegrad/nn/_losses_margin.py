"""Margin and embedding losses of ``nn.functional``, composed from differentiable ops.

The index bookkeeping (which class is the target, which are not) is done once
in NumPy as constant masks; the loss itself is Tensor arithmetic, so gradients
of every order follow. Formulas and checks follow ``torch.nn.functional``.
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..grad_mode import is_grad_enabled
from ..ops.clamp import minimum
from ..ops.elementwise import where
from ..tensor import Tensor
from ._distance import pairwise_distance
from ._losses_pointwise import as_tensor, check_reduction, legacy_reduction, reduce_loss

__all__ = [
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
]


def _target_range_error(op):
    return RuntimeError(f"{op}: target out of range")  # torch's type


def _int_array(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """``max(0, −target·(input1 − input2) + margin)`` for targets ±1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "margin_ranking_loss")
    target = as_tensor(target, input1)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
            f"target: {list(target.shape)} "
        )
    return reduce_loss((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """``input`` where target = 1, ``max(0, margin − input)`` where target = −1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "hinge_embedding_loss")
    t = _int_array(target)
    dtype = input._data.dtype
    margin_part = (margin - input).clamp(min=0.0) * Tensor._wrap((t != 1).astype(dtype))
    self_part = input * Tensor._wrap((t != -1).astype(dtype))
    return reduce_loss(margin_part + self_part, reduction)


_EPSILON = 1e-12


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """``1 − cos(x1, x2)`` where target = 1, ``max(0, cos − margin)`` where target = −1;
    inputs (N, D) with target (N,), or (D,) with a 0-d target."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "cosine_embedding_loss")
    t = _int_array(target)
    tdim = t.ndim
    if tdim not in (0, 1) or input1.ndim != tdim + 1 or input2.ndim != tdim + 1:
        raise RuntimeError(
            f"cosine_embedding_loss: {tdim}D target tensor expects {tdim + 1}D input tensors, "
            f"but found inputs with sizes {list(input1.shape)} and {list(input2.shape)}."
        )
    prod = (input1 * input2).sum(dim=tdim)
    mag1 = (input1 * input1).sum(dim=tdim) + _EPSILON
    mag2 = (input2 * input2).sum(dim=tdim) + _EPSILON
    cos = prod / (mag1 * mag2).sqrt()
    pos = where(t == 1, 1 - cos, 0.0)
    neg = where(t == -1, (cos - margin).clamp(min=0.0), 0.0)
    return reduce_loss(pos + neg, reduction)


def _check_triplet_dims(anchor, positive, negative, op):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(
            f"{op}: The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D "
            "inputs"
        )


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """``max(0, margin + d(a, p) − d(a, n))`` with d the pairwise p-distance
    (``swap``: d(a, n) replaced by min(d(a, n), d(p, n)))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "triplet_margin_loss")
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_loss")
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return reduce_loss((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """:func:`triplet_margin_loss` with any ``distance_function(x1, x2)``
    (default :func:`pairwise_distance`)."""
    check_reduction(reduction, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise ValueError(
            f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}"
        )
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_with_distance_loss")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return reduce_loss((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def _class_input(input, target, op, target_extra=0):
    """(N, C) view of input (C,) or (N, C) (a 0-d input is one sample of one class, as
    PyTorch takes it), and the target array."""
    t = _int_array(target)
    if input.ndim not in (0, 1, 2) or t.ndim > 1 + target_extra:
        raise RuntimeError(
            f"{op}: expected input of 1 or 2 dims and a matching target, got input of "
            f"shape {list(input.shape)} and target of shape {list(t.shape)}"
        )
    x = input.reshape((1, -1)) if input.ndim < 2 else input
    return x, t


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Per sample, ``Σ_{i≠y} w[y]·max(0, margin − x[y] + x[i])^p / C`` (p = 1 or 2)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if isinstance(weight, Tensor) and weight.requires_grad and is_grad_enabled():
        raise RuntimeError(  # torch's kernel has no derivative for it (and says so)
            "The function 'multi_margin_loss' is not differentiable with respect to argument "
            "'weight'. This input cannot have requires_grad True."
        )
    x, t = _class_input(input, target, "multi_margin_loss")
    n, c = x.shape
    flat = t.reshape(-1)
    if flat.shape != (n,):
        raise RuntimeError(
            f"multi_margin_loss: inconsistent target size: {list(t.shape)} for input of size: "
            f"{list(input.shape)}"
        )
    _trace.raise_if((flat < 0) | (flat >= c), _target_range_error, "multi_margin_loss")
    flat = flat.astype(np.int64)
    xy = x.gather(1, Tensor._wrap(flat[:, None]))
    z = (x - xy + margin).clamp(min=0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        w = weight._data if isinstance(weight, Tensor) else np.asarray(weight)
        z = z * Tensor._wrap(w[flat][:, None].astype(x._data.dtype))
    others = (np.arange(c)[None, :] != flat[:, None]).astype(x._data.dtype)
    loss = (z * Tensor._wrap(others)).sum(dim=1) / c
    if input.ndim < 2:
        loss = loss.squeeze(0)
    return reduce_loss(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample, ``Σ_{j, i} max(0, 1 − (x[y_j] − x[i])) / C`` over the target classes
    y_j (the target row up to its first −1) and the non-target classes i."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "multilabel_margin_loss")
    x, t = _class_input(input, target, "multilabel_margin_loss", 1)
    t2 = t.reshape(1, -1) if t.ndim < 2 else t
    if t2.shape != tuple(x.shape):
        raise RuntimeError(
            f"multilabel_margin_loss: inconsistent target size: {list(t.shape)} for input of "
            f"size: {list(input.shape)}"
        )
    n, c = x.shape
    t2 = t2.astype(np.int64)
    # torch checks every entry, those after a row's first -1 too
    _trace.raise_if((t2 < -1) | (t2 >= c), _target_range_error, "multilabel_margin_loss")
    # A position counts while no -1 came before it in its row.
    valid = np.cumprod(t2 != -1, axis=1).astype(bool)
    safe = np.where(valid, t2, 0)
    is_target = ((safe[:, :, None] == np.arange(c)) & valid[:, :, None]).any(axis=1)
    dtype = x._data.dtype
    xy = x.gather(1, Tensor._wrap(safe))  # (N, C): x at the j-th target
    z = (x.unsqueeze(1) - xy.unsqueeze(2) + 1.0).clamp(min=0.0)  # (N, j, i)
    mask = (valid[:, :, None] & ~is_target[:, None, :]).astype(dtype)
    loss = (z * Tensor._wrap(mask)).sum(dim=(1, 2)) / c
    if input.ndim < 2:
        loss = loss.squeeze(0)
    return reduce_loss(loss, reduction)
