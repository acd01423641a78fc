"""``tg.linalg``: linear algebra under PyTorch's ``torch.linalg`` names.

>>> import tapegrad as tg
>>> tg.linalg.det(tg.tensor([[2.0, 0.0], [0.0, 3.0]]))
tensor(6.)
"""

from .ops.decomp import (  # noqa: E402
    cholesky_ex,
    eigh,
    eigvalsh,
    inv_ex,
    lstsq,
    matrix_rank,
    pinv,
    qr,
    svd,
    svdvals,
    tensorinv,
    tensorsolve,
    vander,
)
from .ops.eig import eig, eigvals  # noqa: E402 - issue 10 (complex tensors)
from .ops.householder import householder_product
from .ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .ops.linalg import matmul
from .ops.lu import lu, lu_factor, lu_factor_ex, lu_solve
from .ops.matfun import cond, matrix_exp
from .ops.norm import linalg_norm as norm
from .ops.norm import matrix_norm, vector_norm

# -- issue 10: products, decompositions and friends --
from .ops.products import linalg_cross as cross  # noqa: E402
from .ops.products import matrix_power, multi_dot, vecdot  # noqa: E402
from .ops.solve import (
    LinAlgError,
    cholesky,
    det,
    inv,
    slogdet,
    solve,
    solve_triangular,
)
from .ops.solve_more import solve_ex
from .ops.tri import diagonal as _diagonal  # noqa: E402


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``tg.linalg.diagonal``: :func:`tapegrad.diagonal` with the last two dims as default."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = [
    "cholesky_ex",
    "eigh",
    "eigvalsh",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "householder_product",
    "cond",
    "matrix_exp",
    "solve_ex",
    "matrix_rank",
    "pinv",
    "qr",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "cross",
    "diagonal",
    "matrix_power",
    "multi_dot",
    "vecdot",
    "LinAlgError",
    "cholesky",
    "det",
    "inv",
    "matmul",
    "matrix_norm",
    "norm",
    "slogdet",
    "solve",
    "solve_triangular",
    "vector_norm",
    "eig",
    "eigvals",
]

# The registered ops here go through the same wrapper as tg.<name>: torch-like TypeErrors
# and vmap dispatch (Note [vmap levels]).
from .ops._registry import OPS as _OPS  # noqa: E402
from .ops._registry import exported as _exported  # noqa: E402

for _info in _OPS.values():
    for _key, _value in list(globals().items()):
        if _value is _info.fn and not _key.startswith("_"):
            globals()[_key] = _exported(_info)
del _info, _key, _value

# vmap dispatch (Note [vmap levels]): rules in tapegrad/_batch_rules_ext.py.
from .ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in (
    "eigh", "eigvalsh", "svd", "svdvals", "pinv", "cond", "lu_factor", "lu_factor_ex",
    "cholesky_ex", "inv_ex", "matrix_rank",
):  # fmt: skip
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
cross = _vmap_hooked("linalg_cross", cross)
