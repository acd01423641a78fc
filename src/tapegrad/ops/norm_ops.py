"""Ops defined by a vector norm: dist and renorm.

dist:    ‖input − other‖_p
renorm:  each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to
         maxnorm / (norm + 1e-7); the gradient includes the norm's dependence on the input,
         as PyTorch's renorm_backward does (composed here, so double backward works too).
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import as_tensor, bfloat16_in_float32
from .elementwise import where
from .norm import vector_norm

__all__ = ["dist", "renorm"]


@register("dist")
def dist(input, other, p=2):
    """The ``p``-norm of ``input − other`` (broadcast), a 0-d tensor."""
    if isinstance(p, Tensor):
        p = p.item()
    return vector_norm(input - as_tensor(other, "dist"), p)


@register("renorm")
@bfloat16_in_float32
def renorm(input, p, dim, maxnorm):
    """Each sub-tensor ``input.select(dim, i)`` with a ``p``-norm above ``maxnorm`` rescaled
    to norm ``maxnorm`` (to within 1e-7); the others unchanged."""
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (got p={p})")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    ndim = input._data.ndim
    if ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"renorm: expected a floating point input, got {input._data.dtype}")
    d = _check_dim(dim, ndim, "renorm")
    others = tuple(i for i in range(ndim) if i != d)
    norm = vector_norm(input, p, others, True)
    exceeds = norm._data > maxnorm
    factor = where(exceeds, maxnorm / (norm + 1e-7), np.ones((), input._data.dtype))
    return input * factor
