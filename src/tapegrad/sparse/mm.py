"""Sparse @ dense: ``tg.sparse.mm``, ``tg.spmm``, ``sparse @ dense`` (scipy.sparse CSR kernel).

Derivatives, for ``out = S @ D`` with S of shape (n, k) holding ``values`` at ``(row, col)``:
    d/dD = S^T @ g                          (another sparse product: differentiable again)
    d/dvalues[e] = sum_j g[row[e], j] * D[col[e], j]   (only the stored entries, as PyTorch)
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result, sum_to
from ..grad_mode import STATE
from ..ops._registry import register
from ..tensor import Tensor
from .coo import SparseTensor

__all__ = ["mm", "spmm"]


def _product(indices, values, shape, dense):
    """``S @ dense`` on arrays; ``dense`` may carry leading batch axes ``(..., k, m)``."""
    import scipy.sparse as sp  # noqa: PLC0415 - loaded with the first sparse product

    n, k = shape
    csr = sp.csr_array((values, (indices[0], indices[1])), shape=shape)
    if dense.ndim == 2:
        return np.asarray(csr @ dense)
    lead, m = dense.shape[:-2], dense.shape[-1]
    flat = np.moveaxis(dense, -2, 0).reshape(k, -1)
    out = np.asarray(csr @ flat).reshape((n,) + lead + (m,))
    return np.moveaxis(out, 0, -2)


def _spmm(indices, values: Tensor, shape, dense: Tensor) -> Tensor:
    data = _product(indices, values._data, shape, dense._data)
    nv = values._rg
    nd = dense._rg
    if not (STATE.enabled and (nv or nd)):
        return Tensor._wrap(data)
    row, col = indices[0], indices[1]
    transposed = indices[::-1]
    tshape = (shape[1], shape[0])
    nnz = values._data.shape

    def backward(g):
        # Batched-safe (Note [Batched gradients]): g is (..., n, m); rows index dim -2.
        gv = sum_to((g[..., row, :] * dense[..., col, :]).sum(-1), nnz) if nv else None
        gd = _spmm(transposed, values, tshape, g) if nd else None
        return gv, gd

    return make_result(
        data,
        (values, dense),
        backward,
        "SpmmBackward",
        saved=tuple(t for t, need in ((dense, nv), (values, nd)) if need),
    )


@register("spmm", method=False)
def spmm(input, mat2):
    """``input @ mat2`` for a 2-D sparse COO ``input`` and a 2-D dense ``mat2``; a dense
    result, with gradients to ``mat2`` and to ``input``'s values.

    Raises:
        TypeError: if ``input`` is not sparse or ``mat2`` is.
        RuntimeError: for shapes that do not chain or differing dtypes.
    """
    if not isinstance(input, SparseTensor):
        raise TypeError(f"spmm: expected a sparse COO first argument, got {type(input).__name__}")
    if isinstance(mat2, SparseTensor) or not isinstance(mat2, Tensor):
        raise TypeError(
            f"spmm: expected a dense Tensor second argument, got {type(mat2).__name__} "
            "(sparse @ sparse is not supported; call .to_dense() on one of them)"
        )
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"spmm: expected 2-D matrices, got shapes {list(input.shape)} (sparse) and "
            f"{list(mat2.shape)}"
        )
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"spmm: shapes {list(input.shape)} (sparse) and {list(mat2.shape)} cannot be "
            f"multiplied ({input.shape[1]} != {mat2.shape[0]})"
        )
    if input.dtype != mat2.dtype:
        raise RuntimeError(
            f"spmm: expected both operands to have the same dtype, got {input.dtype} (sparse) "
            f"and {mat2.dtype}"
        )
    return _spmm(input._idx, input._vals, input.shape, mat2)


def mm(mat1, mat2):
    """``torch.sparse.mm``: sparse @ dense (see :func:`spmm`); dense @ dense as ``matmul``."""
    if isinstance(mat1, SparseTensor):
        return spmm(mat1, mat2)
    if isinstance(mat2, SparseTensor):
        raise TypeError("sparse.mm: dense @ sparse is not supported; use (s.t() @ d.t()).t()")
    return mat1 @ mat2
