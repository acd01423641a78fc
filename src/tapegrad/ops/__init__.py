"""The op families. Importing this package binds every op to Tensor (see _registry)."""

from . import arithmetic, elementwise, indexing, inplace, joining, linalg, reduction, shape  # noqa: F401
from . import activation, clamp, einsum, extrema, norm, scan, softmax, solve, statistics  # noqa: F401
from . import activation_rows  # noqa: F401
from . import binary_table, misc_math, polynomials, unary_table  # noqa: F401 - issue 10 tables

# -- issue 10 (second half): new families, one file each --
from . import index_ops, products, reduce_more, shape_more, sorting, tri  # noqa: F401
from . import decomp  # noqa: F401

# -- issue 10 (part M): numeric utilities --
from . import broadcasting, calculus, counting, covariance, fill, norm_ops  # noqa: F401
from . import aten, copy_variants, strided, view_scatter  # noqa: F401 - issue 10 V

# -- issue 10 part L: linear algebra, one file per family --
from . import householder, ldl, lowrank, lu, matfun, solve_more  # noqa: F401
from . import complex_guard, complex_ops, eig  # noqa: F401 - issue 10: complex tensors

# -- issue 10 (i10m): the _ twins of the hand-written ops (last: it reads the registry) --
from . import inplace_methods  # noqa: F401, E402
from ._registry import OPS  # noqa: E402

__all__ = ["OPS"]
