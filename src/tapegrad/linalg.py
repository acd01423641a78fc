"""``tg.linalg``: linear algebra under PyTorch's ``torch.linalg`` names.

>>> import tapegrad as tg
>>> tg.linalg.det(tg.tensor([[2.0, 0.0], [0.0, 3.0]]))
tensor(6.)
"""

from .ops.linalg import matmul
from .ops.norm import linalg_norm as norm
from .ops.norm import matrix_norm, vector_norm
from .ops.solve import (
    LinAlgError,
    cholesky,
    det,
    inv,
    slogdet,
    solve,
    solve_triangular,
)

__all__ = [
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
]
