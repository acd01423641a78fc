"""The op families. Importing this package binds every op to Tensor (see _registry)."""

from . import arithmetic, elementwise, indexing, inplace, joining, linalg, reduction, shape  # noqa: F401
from . import activation, clamp, einsum, extrema, norm, scan, softmax, solve, statistics  # noqa: F401
from . import activation_rows  # noqa: F401
from . import binary_table, misc_math, polynomials, unary_table  # noqa: F401 - issue 10 tables
from ._registry import OPS

__all__ = ["OPS"]
