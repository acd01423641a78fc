"""``tapegrad.sparse``: sparse COO tensors on scipy.sparse (torch.sparse's names).

``tg.sparse_coo_tensor``, ``x.to_sparse()``, ``s.coalesce()``, ``s.indices()``/``values()``,
``s.to_dense()``, ``tg.sparse.sum``, ``tg.sparse.mm`` / ``tg.spmm`` / ``s @ dense`` with
gradients to the dense operand and to the sparse values (Note [Sparse tensors in the
graph] in coo.py), and the legacy ``tg.sparse.FloatTensor(indices, values, size)``.
"""

from __future__ import annotations

from .. import _dtypes
from .coo import SparseTensor, sparse_sum
from .create import sparse_coo_tensor, to_sparse
from .layout import Layout, sparse_coo, strided
from .mm import mm, spmm

sum = sparse_sum  # noqa: A001 - torch.sparse.sum

__all__ = [
    "SparseTensor",
    "Layout",
    "sparse_coo",
    "strided",
    "sparse_coo_tensor",
    "to_sparse",
    "sum",
    "mm",
    "spmm",
    "FloatTensor",
    "DoubleTensor",
]


def _legacy(dtype, name):
    def build(indices, values, size=None, *, device=None):
        return sparse_coo_tensor(indices, values, size, dtype=dtype, device=device)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"Legacy ``torch.sparse.{name}(indices, values, size)``: a {dtype} COO tensor."
    return build


FloatTensor = _legacy(_dtypes.float32, "FloatTensor")
DoubleTensor = _legacy(_dtypes.float64, "DoubleTensor")
