"""Helpers shared by the distributions (as ``torch.distributions.utils``)."""

from __future__ import annotations

import numbers

import numpy as np

import tapegrad as tg

from ..creation import _rng
from ..tensor import Tensor

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "draw",
    "eps_of",
]


def broadcast_all(*values):
    """Tensors of one broadcast shape; numbers take the dtype of the tensors (or the default)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or Tensor")
    dtype = tensors[0].dtype if tensors else tg.get_default_dtype()
    for t in tensors[1:]:
        dtype = np.promote_types(dtype, t.dtype)
    if not np.issubdtype(dtype, np.floating):
        dtype = tg.get_default_dtype()
    as_t = [
        v.to(dtype) if isinstance(v, Tensor) else tg.tensor(float(v), dtype=dtype) for v in values
    ]
    shape = np.broadcast_shapes(*(t.shape for t in as_t))
    return tuple(t.expand(shape) if t.shape != shape else t for t in as_t)


def eps_of(dtype) -> float:
    return float(np.finfo(dtype).eps)


def clamp_probs(probs: Tensor) -> Tensor:
    eps = eps_of(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return tg.sigmoid(logits)
    return tg.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps = clamp_probs(probs)
    if is_binary:
        return tg.log(ps) - tg.log1p(-ps)
    return tg.log(ps)


class lazy_property:
    """Computed on first access, then stored on the instance (as torch's)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = self.fn(obj)
        setattr(obj, self.fn.__name__, value)
        return value


def draw(how, shape, dtype, generator=None) -> Tensor:
    """A tensor of ``shape`` drawn by ``how(numpy_generator, shape)`` from tapegrad's
    generator (seeded by ``tg.manual_seed``), cast to ``dtype``."""
    arr = np.asarray(how(_rng(generator), tuple(shape)), dtype=np.float64)
    return Tensor._wrap(arr.astype(dtype, copy=False))
