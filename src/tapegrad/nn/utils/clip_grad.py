"""Gradient clipping, as ``torch.nn.utils``: clip_grad_norm_, clip_grad_value_,
get_total_norm and clip_grads_with_norm_.

Gradients are scaled in place (their arrays; version counters bumped), so an optimizer
built over the same parameters sees the clipped values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...grad_mode import no_grad
from ...ops.joining import stack
from ...ops.norm import vector_norm
from ...tensor import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_norm",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
]


def _tensors(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _grads(parameters):
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` together, as a 0-d tensor (0 if none).

    Raises:
        RuntimeError: the norm is NaN or infinite and ``error_if_nonfinite``.
    """
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return Tensor._wrap(np.zeros((), np.float32))
    arrays = [t._data for t in tensors]
    if norm_type in (2.0, math.inf) and len({a.dtype for a in arrays}) == 1:
        return Tensor._wrap(_fast_total_norm(arrays, norm_type, error_if_nonfinite))
    with no_grad():
        norms = [vector_norm(t.detach(), norm_type) for t in tensors]
        dtypes = {n._data.dtype for n in norms}
        if len(dtypes) > 1:
            dtype = np.result_type(*dtypes)
            norms = [n.to(dtype) for n in norms]
        total = vector_norm(stack(norms), norm_type)
    _check_finite(total._data, norm_type, error_if_nonfinite)
    return total


def _fast_total_norm(arrays, norm_type, error_if_nonfinite):
    """The 2- or inf-norm straight from the arrays (the common case, on the training hot
    path): per-tensor norms, then the norm of those, as torch."""
    dtype = arrays[0].dtype
    # arrays all the way (no Python scalars), so tapegrad.jit records and replays it
    if norm_type == 2.0:
        norms = np.sqrt(np.stack([np.vdot(a, a) for a in arrays]))
        total = np.sqrt(np.vdot(norms, norms))
    else:
        parts = [
            np.max(np.abs(a), keepdims=True).reshape(1) if a.size else np.zeros(1, dtype)
            for a in arrays
        ]
        total = np.max(np.concatenate(parts))
    if dtype.kind == "c":  # the norm of complex gradients is real, as torch's
        total, dtype = np.abs(total), np.finfo(dtype).dtype
    total = np.asarray(total, dtype=dtype)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


def _check_finite(value, norm_type, error_if_nonfinite):
    if error_if_nonfinite and not np.isfinite(value):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every gradient by ``min(1, max_norm / (total_norm + 1e-6))``, in place."""
    grads = _grads(parameters)
    if not grads:
        return
    norm = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    coef = np.minimum(float(max_norm) / (norm + 1e-6), 1.0)
    cast = {}  # the coefficient in each gradient dtype, cast once (not once per gradient)
    for g in grads:
        dtype = g._data.dtype
        c = cast.get(dtype)
        if c is None:
            c = cast[dtype] = coef.astype(dtype)
        np.multiply(g._data, c, out=g._data)
        g._vc.value += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients of ``parameters`` so their joint ``norm_type``-norm is at most
    ``max_norm`` (``inf`` for the max-norm). Returns the norm before clipping (0-d tensor).

    >>> import tapegrad as tg
    >>> w = tg.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()  # grad (6, 8), norm 10
    >>> tg.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(10.)
    >>> [round(v, 4) for v in w.grad.tolist()]
    [0.6, 0.8]
    """
    parameters = _tensors(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    if math.isnan(clip_value):
        raise ValueError("clip_value must not be NaN")
    # torch's foreach path (its default) clamps twice, min then max: two versions
    bump = 1 if foreach is False else 2
    for g in _grads(parameters):
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._vc.value += bump


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of :func:`clip_grad_norm_` (warns FutureWarning, as torch)."""
    warnings.warn(
        "`tapegrad.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`tapegrad.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
