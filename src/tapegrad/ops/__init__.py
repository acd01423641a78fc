"""The op families. Importing this package binds every op to Tensor (see _registry)."""

from . import arithmetic, elementwise, linalg, reduction, shape  # noqa: F401
from . import activation, clamp  # noqa: F401 - math ops (issue 3)
from ._registry import OPS

__all__ = ["OPS"]
