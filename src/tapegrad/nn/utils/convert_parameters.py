"""``parameters_to_vector`` / ``vector_to_parameters``, as ``torch.nn.utils``."""

from __future__ import annotations

from ...ops.joining import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One flat vector of all parameters, in order (differentiable w.r.t. each)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy slices of ``vec`` into ``parameters`` in order (sets each ``param.data`` to a
    view of ``vec``, as torch).

    Raises:
        TypeError: ``vec`` is not a Tensor.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = Tensor._wrap(vec._data[pointer : pointer + n].reshape(param.shape))
        pointer += n
