"""Loss functions of ``nn.functional``: argument checks and the coefficient arrays.

Cross entropy and NLL build the constant array ``A`` of Note [Cross entropy as
soft targets] (in _loss_ops.py): ``loss = −Σ A ⊙ log_softmax(x)`` (cross entropy)
or ``−Σ A ⊙ x`` (NLL, whose input already holds log-probabilities).
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..grad_mode import is_grad_enabled
from ..ops.softmax import log_softmax
from ..tensor import Tensor
from . import _loss_ops
from ._losses_pointwise import _same_size, legacy_reduction

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _class_dim(x, op):
    if x.ndim == 0:
        error = ValueError if op == "nll_loss" else RuntimeError  # torch's types
        raise error(f"{op}: input must have at least 1 dim (classes), got a 0-d tensor")
    return 1 if x.ndim >= 2 else 0


def _weight_array(weight, n_classes, dtype, op, soft=False):
    if weight is None:
        return None
    w = weight._data if isinstance(weight, Tensor) else np.asarray(weight)
    if w.shape != (n_classes,):
        raise RuntimeError(f"{op}: weight must have shape [{n_classes}], got {list(w.shape)}")
    if isinstance(weight, Tensor) and weight.requires_grad and is_grad_enabled():
        if soft:  # torch differentiates the composite soft-label loss in the weight
            raise NotImplementedError(f"{op}: a class weight that requires grad is not supported")
        raise RuntimeError(  # torch's kernel has no derivative for it (and says so)
            "The function 'nll_loss_forward' is not differentiable with respect to argument "
            "'weight'. This input cannot have requires_grad True."
        )
    return w.astype(dtype, copy=False)


def _array(x):
    """The array of a Tensor or array (as is: a traced array stays traced), else a new one."""
    if isinstance(x, Tensor):
        return x._data
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def _target_error(op, t, bad, n_classes):
    return IndexError(
        f"{op}: Target {int(t[bad].flat[0])} is out of bounds (input has {n_classes} classes)."
    )


def _index_coefficients(x, target, weight, ignore_index, smoothing, op, mean=False):
    """``(A, denom)`` for class-index targets; denom = Σ weight[target] over kept samples
    (a 0-d array: the targets' values never reach Python, see tapegrad._trace).

    ``mean``: ``(A / denom, offset)`` instead (see :func:`_mean_scale`)."""
    cdim = _class_dim(x, op)
    n_classes = x.shape[cdim]
    t = _array(target)
    expected = x.shape[:cdim] + x.shape[cdim + 1 :]
    if t.shape != expected:
        # torch: a batch size that differs is a ValueError, any other size a RuntimeError
        batch = bool(t.ndim and expected) and t.shape[0] != expected[0]
        raise (ValueError if batch else RuntimeError)(
            f"{op}: target of shape {list(t.shape)} doesn't match input of shape "
            f"{list(x.shape)} (expected {list(expected)})"
        )
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    _trace.raise_if(bad, _target_error, op, t, bad, n_classes)
    safe = np.where(valid, t, 0)
    w = _weight_array(weight, n_classes, x.dtype, op)
    wt = (w[safe] if w is not None else np.ones(t.shape, x.dtype)) * valid
    denom = wt.sum()
    offset = None
    if mean:
        kept, offset = _mean_scale(valid, denom, x.dtype)
        wt = wt * kept
    else:
        kept = valid
    coef = np.zeros(x.shape, x.dtype)
    np.put_along_axis(
        coef, np.expand_dims(safe, cdim), np.expand_dims(wt * (1.0 - smoothing), cdim), axis=cdim
    )
    if smoothing:
        per_class = np.ones(n_classes, x.dtype) if w is None else w
        view = [1] * x.ndim
        view[cdim] = n_classes
        coef += (smoothing / n_classes) * per_class.reshape(view) * np.expand_dims(kept, cdim)
    return coef.astype(x.dtype, copy=False), (denom if offset is None else offset)


def _mean_scale(valid, denom, dtype):
    """``(kept, offset)`` for reduction='mean' of index targets, no Python branch on ``denom``.

    ``kept`` is ``valid / denom``, and NaN at a kept sample when denom is 0 (every
    kept sample's class weighs 0), so its coefficients, hence gradients, are NaN as
    torch's ``0/0``; an ignored sample's stay 0 (every sample ignored: NaN loss, zero
    gradient, as torch). ``offset`` (NaN when denom is 0, else 0) is added to the loss.
    """
    empty = denom == 0
    scale = np.where(empty, np.nan, 1.0 / np.where(empty, 1.0, denom)).astype(dtype)
    return np.where(valid, scale, 0).astype(dtype), np.where(empty, np.nan, 0.0).astype(dtype)


def _plain_mean(reduction, x, weight, smoothing) -> bool:
    """(N, C) logits, class indices, mean, no weights, no smoothing: the fused path."""
    shape_ok = x.ndim == 2 and x.shape[1] > 0
    return reduction == "mean" and shape_ok and weight is None and not smoothing


def _index_cross_entropy_mean(x, t, ignore_index):
    """The common case of cross entropy, (N, C) logits and class indices averaged: the
    checks of :func:`_index_coefficients`, then one fused op without the dense A."""
    n_classes = x.shape[1]
    if t.shape != x.shape[:1]:
        batch = bool(t.ndim) and t.shape[0] != x.shape[0]
        raise (ValueError if batch else RuntimeError)(
            f"cross_entropy: target of shape {list(t.shape)} doesn't match input of shape "
            f"{list(x.shape)} (expected {list(x.shape[:1])})"
        )
    valid = t != ignore_index
    safe = np.where(valid, t, 0)  # 0 is a class (n_classes > 0): ignored samples pass
    bad = (safe < 0) | (safe >= n_classes)  # where valid, safe is t
    _trace.raise_if(bad, _target_error, "cross_entropy", t, bad, n_classes)
    return _loss_ops.index_cross_entropy_mean(x, safe, valid)


def _mean_over(coef, denom):
    """``(coef / denom, offset)`` for reduction='mean', with no Python branch on ``denom``.

    Every sample ignored (denom 0) gives a NaN loss with zero gradient, as PyTorch:
    coef is all zeros then, so dividing by inf keeps it zero, and ``offset`` (NaN
    there, else 0) is added to the loss value.
    """
    empty = denom == 0
    coef = (coef / np.where(empty, np.inf, denom)).astype(coef.dtype, copy=False)
    return coef, np.where(empty, np.nan, 0.0).astype(coef.dtype)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Cross entropy between logits ``input`` (N, C, ...) or (C,) and ``target``.

    ``target`` holds class indices (N, ...) or class probabilities (same shape as
    input). One fused Node: d/dx = softmax(x)·Σ_c A − A (Note [Cross entropy as soft targets]).
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    x = input
    cdim = _class_dim(x, "cross_entropy")
    n_classes = x.shape[cdim]
    tdata = _array(target)
    if tdata.dtype.kind == "f":
        if tdata.shape != x.shape:
            raise RuntimeError(
                f"cross_entropy: probability target of shape {list(tdata.shape)} must have "
                f"the input's shape {list(x.shape)}"
            )
        if isinstance(target, Tensor) and target.requires_grad:
            return _soft_cross_entropy_composed(x, target, weight, cdim, reduction, label_smoothing)
        coef = tdata.astype(x.dtype)
        if label_smoothing:
            coef = coef * (1.0 - label_smoothing) + label_smoothing / n_classes
        w = _weight_array(weight, n_classes, x.dtype, "cross_entropy", soft=True)
        if w is not None:
            view = [1] * x.ndim
            view[cdim] = n_classes
            coef = coef * w.reshape(view)
        denom = x._data.size // max(n_classes, 1)
    elif _plain_mean(reduction, x, weight, label_smoothing):
        return _index_cross_entropy_mean(x, tdata, ignore_index)
    else:
        mean = reduction == "mean"
        coef, denom = _index_coefficients(
            x, tdata, weight, ignore_index, label_smoothing, "cross_entropy", mean
        )
        if mean:  # denom is the offset
            return _loss_ops.soft_cross_entropy(x, coef, cdim, True, denom)
    if reduction == "none":
        return _loss_ops.soft_cross_entropy(x, coef, cdim, False)
    if reduction == "mean":
        coef, offset = _mean_over(coef, denom)
        return _loss_ops.soft_cross_entropy(x, coef, cdim, True, offset)
    return _loss_ops.soft_cross_entropy(x, coef, cdim, True)


def _soft_cross_entropy_composed(x, target, weight, cdim, reduction, smoothing):
    """Cross entropy with probability targets that need a gradient: ``−Σ A ⊙ log_softmax(x)``
    with ``A`` built from ``target`` by differentiable ops (dL/dtarget = −w·log_softmax(x))."""
    n_classes = x.shape[cdim]
    coef = target
    if smoothing:
        coef = coef * (1.0 - smoothing) + smoothing / n_classes
    w = _weight_array(weight, n_classes, x.dtype, "cross_entropy", soft=True)
    if w is not None:
        view = [1] * x.ndim
        view[cdim] = n_classes
        coef = coef * Tensor._wrap(w.reshape(view))
    per = -(coef * log_softmax(x, cdim)).sum(dim=cdim)
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    return per.sum() / max(x._data.size // max(n_classes, 1), 1)


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """Negative log likelihood of log-probabilities ``input`` (N, C, ...) at ``target``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x = input
    cdim = _class_dim(x, "nll_loss")
    mean = reduction == "mean"
    coef, denom = _index_coefficients(x, target, weight, ignore_index, 0.0, "nll_loss", mean)
    coef = 0.0 - coef  # −A, and +0 (not −0) off the targets: torch's gradient there
    if reduction == "none":
        return (x * Tensor._wrap(coef)).sum(dim=cdim)
    if mean:  # denom is the offset
        return (x * Tensor._wrap(coef)).sum() + Tensor._wrap(denom)
    return (x * Tensor._wrap(coef)).sum()


def _weighted(loss, input, weight, reduction):
    """An elementwise ``weight`` (input's size); 'mean' divides by Σ weight, as torch."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input − target)²``, reduced (optionally weighted elementwise)."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        _same_size("mse_loss", input, target)  # torch's broadcasting warning
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = input - target
    if weight is not None:
        return _weighted(d * d, input, weight, reduction)
    return _reduce(d * d, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input − target|`` (gradient sign(d), 0 at d = 0), reduced."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        _same_size("l1_loss", input, target)  # torch's broadcasting warning
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = input - target
    loss = d.abs()  # not d·sign(d) with a constant sign: a create_graph gradient depends on d
    if weight is not None:
        return _weighted(loss, input, weight, reduction)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Binary cross entropy on logits (sigmoid fused in, stable for large |input|)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({list(target.shape)}) must be the same as input size "
            f"({list(input.shape)})"
        )
    pw = None
    if pos_weight is not None:
        if isinstance(pos_weight, Tensor) and pos_weight.requires_grad and is_grad_enabled():
            # torch has no derivative for pos_weight either, and refuses it the same way
            raise RuntimeError(
                "The function 'binary_cross_entropy_with_logits' is not differentiable with "
                "respect to argument 'pos_weight'. This input cannot have requires_grad True."
            )
        pw = np.asarray(
            pos_weight._data if isinstance(pos_weight, Tensor) else pos_weight, dtype=input.dtype
        )
    loss = _loss_ops.bce_with_logits(input, target, pw)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)
