"""Elementwise losses of ``nn.functional``, composed from tapegrad's differentiable ops.

Each loss is a few lines of Tensor arithmetic, so its gradient (and every
higher derivative, with ``create_graph=True``) comes from the ops it uses; the
formulas and argument checks follow ``torch.nn.functional`` line by line.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _trace, _warn
from ..autograd.graph import make_result
from ..grad_mode import STATE, no_grad
from ..ops.elementwise import where
from ..tensor import Tensor

__all__ = [
    "binary_cross_entropy",
    "kl_div",
    "smooth_l1_loss",
    "huber_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, reduction):
    """The ``reduction`` string, honouring the deprecated ``size_average``/``reduce`` flags."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def reduce_loss(loss, reduction, op="loss"):
    """``loss`` reduced by ``'none' | 'mean' | 'sum'`` (ValueError for anything else)."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def check_reduction(reduction, op, extra=()):
    if reduction not in _REDUCTIONS + tuple(extra):
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def as_tensor(x, like):
    """``x`` as a Tensor of ``like``'s float dtype (numbers and arrays are wrapped)."""
    if isinstance(x, Tensor):
        return x
    return Tensor._wrap(np.asarray(x, dtype=like._data.dtype))


def _same_size(op, input, target):
    if tuple(target.shape) != tuple(input.shape):
        _warn.warn(
            f"{op}: Using a target size ({list(target.shape)}) that is different to the input "
            f"size ({list(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
        )
        _broadcastable(op, input, target)


def _broadcastable(op, input, target):
    """Shapes that do not broadcast: an error that names the loss (not the ``sub`` or
    ``mul`` inside it)."""
    if tuple(target.shape) != tuple(input.shape):
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise RuntimeError(
                f"{op}: the input of shape {list(input.shape)} and the target of shape "
                f"{list(target.shape)} cannot be broadcast together"
            ) from None


def logsigmoid_(x):
    """log σ(x) = −softplus(−x), stable for any |x|."""
    return -((-x).softplus())


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """``−w·[t·log x + (1 − t)·log(1 − x)]`` for probabilities ``input``; each log is
    clamped at −100 as PyTorch, so x = 0 or 1 gives a finite loss.

    Raises:
        ValueError: target and input sizes differ, or an unknown reduction.
        RuntimeError: an input value outside [0, 1].
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "binary_cross_entropy")
    target = as_tensor(target, input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    x = input._data
    _trace.raise_if((x < 0) | (x > 1), _bce_range_error)
    loss = _bce(input, target)
    if weight is not None:
        if isinstance(weight, Tensor) and weight.requires_grad:
            raise RuntimeError(
                "The function 'binary_cross_entropy' is not differentiable with respect to "
                "argument 'weight'. This input cannot have requires_grad True."
            )
        loss = loss * as_tensor(weight, input)
    return reduce_loss(loss, reduction, "binary_cross_entropy")


_BCE_EPS = 1e-12


def _bce(x, t):
    """Elementwise ``−[t·max(log x, −100) + (1 − t)·max(log(1 − x), −100)]``, one Node with
    torch's derivatives: d/dx = (x − t) / max(x·(1 − x), 1e-12) (finite at x = 0 or 1,
    where the clamped logs would give NaN) and d/dt = log(1 − x) − log(x)."""
    xd, td = x._data, t._data
    with np.errstate(divide="ignore"):
        log_x = np.maximum(np.log(xd), -100.0)
        log_1mx = np.maximum(np.log1p(-xd), -100.0)
    out = (-(td * log_x + (1 - td) * log_1mx)).astype(xd.dtype, copy=False)
    need_x, need_t = x._rg, t._rg

    def backward(g):
        if STATE.enabled:  # create_graph: the rules as functions of x and t
            X, T = x, t
        else:
            X, T = Tensor._wrap(xd), Tensor._wrap(td)
        gx = g * (X - T) / ((1 - X) * X).clamp(min=_BCE_EPS) if need_x else None
        gt = g * ((1 - X).log() - X.log()) if need_t else None
        return gx, gt

    return make_result(out, (x, t), backward, "BinaryCrossEntropyBackward", saved=(x, t))


def _bce_range_error():
    return RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")


def _negative_var_error():
    return ValueError("var has negative entry/entries")


def _xlogy_self(t):
    """t·log t with 0 where t == 0 (and a finite gradient path there)."""
    pos = t._data > 0
    safe = where(pos, t, 1.0)
    return where(pos, t * safe.log(), 0.0)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target ‖ exp(input)) pointwise: ``t·(log t − input)`` (``exp(t)·(t − input)``
    when ``log_target``). ``reduction='batchmean'`` divides the sum by ``input.size(0)``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "kl_div", ("batchmean",))
    if reduction == "mean":
        _warn.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
        )
    target = as_tensor(target, input)
    _broadcastable("kl_div", input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogy_self(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return reduce_loss(loss, reduction, "kl_div")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5·d²/beta`` where |d| < beta, else ``|d| − 0.5·beta`` (d = input − target);
    beta = 0 is the L1 loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    target = as_tensor(target, input)
    _same_size("smooth_l1_loss", input, target)
    d = input - target
    ad = d.abs()
    if beta == 0:
        return reduce_loss(ad, reduction)
    # m = min(|d|, beta): 0.5·m²/beta + (|d| − m) is both branches at once (no value
    # branch, so tapegrad.jit replays it), with the same first and second derivatives.
    m = ad.clamp(max=beta)
    return reduce_loss(m * m * (0.5 / beta) + (ad - m), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5·d²`` where |d| < delta, else ``delta·(|d| − 0.5·delta)``; optional
    elementwise ``weight`` (same size as input)."""
    check_reduction(reduction, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    target = as_tensor(target, input)
    _same_size("huber_loss", input, target)
    d = input - target
    ad = d.abs()
    m = ad.clamp(max=delta)  # both branches at once, as smooth_l1_loss
    loss = m * m * 0.5 + (ad - m) * delta
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return reduce_loss(loss, reduction)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """Poisson negative log likelihood: ``exp(x) − t·x`` (``log_input``) or
    ``x − t·log(x + eps)``; ``full`` adds Stirling's ``t·log t − t + ½·log(2πt)`` where t > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "poisson_nll_loss")
    target = as_tensor(target, input)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target._data > 1
        safe = where(big, target, 2.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + where(big, stirling, 0.0)
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood ``½·(log var + (input − target)²/var)`` (+ ½·log 2π
    when ``full``). ``var`` may have one dim fewer, or a size-1 dim (homoscedastic); it is
    clamped at ``eps`` for the value only (the gradient passes through, as PyTorch).

    Raises:
        ValueError: a negative variance, a var of the wrong size, or an unknown reduction.
    """
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = Tensor._wrap(np.full(input.shape, var, dtype=input._data.dtype))
    else:
        _trace.raise_if(var._data < 0, _negative_var_error)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (
            input.ndim == var.ndim
            and sum(b for a, b in zip(input.shape, var.shape, strict=True) if a != b) == 1
        ):
            raise ValueError("var is of incorrect size")
    check_reduction(reduction, "gaussian_nll_loss")
    with no_grad():
        bump = Tensor._wrap(np.maximum(var._data, eps) - var._data)
    var = var + bump
    loss = (var.log() + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + _HALF_LOG_2PI
    return reduce_loss(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(−target·input))`` for targets ±1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "soft_margin_loss")
    target = as_tensor(target, input)
    _broadcastable("soft_margin_loss", input, target)
    return reduce_loss((-(target * input)).softplus(), reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """Per sample, the mean over classes of ``−[t·log σ(x) + (1 − t)·log σ(−x)]``
    (times ``weight``); input (N, C) or (C,)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, "multilabel_soft_margin_loss")
    target = as_tensor(target, input)
    loss = -(target * logsigmoid_(input) + (1 - target) * logsigmoid_(-input))
    if weight is not None:
        loss = loss * as_tensor(weight, input)
    class_dim = input.ndim - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    return reduce_loss(loss, reduction)
