"""The op families. Importing this package binds every op to Tensor (see _registry)."""

from . import arithmetic, elementwise, linalg, reduction, shape  # noqa: F401
from . import activation, clamp, extrema, norm, scan, softmax, statistics  # noqa: F401 - issue 3
from ._registry import OPS

__all__ = ["OPS"]
