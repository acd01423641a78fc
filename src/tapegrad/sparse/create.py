"""Making sparse COO tensors: ``sparse_coo_tensor`` and ``dense.to_sparse()``."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .coo import SparseTensor, _linear

__all__ = ["sparse_coo_tensor", "to_sparse"]


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    check_invariants=None,
    is_coalesced=None,
) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (duplicates add up).

    Args:
        indices: int array-like of shape ``(ndim, nnz)``.
        values: array-like or Tensor of shape ``(nnz,)``; a Tensor that requires grad
            keeps its graph, so gradients reach whatever computed it.
        size: the shape; inferred as ``indices.max(1) + 1`` when omitted.
        dtype: the values' dtype (default: inferred as ``tg.tensor`` does).
        requires_grad: make the values a leaf that requires grad (``.grad`` is sparse).
        check_invariants: accepted for PyTorch's signature; tapegrad always checks.
        is_coalesced: declare the indices sorted and unique (not checked, as PyTorch).

    Raises:
        RuntimeError: for indices out of bounds or of the wrong shape, or values whose
            length is not the number of indices.
    """
    from ..creation import tensor  # noqa: PLC0415

    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.dtype.kind not in "iu" and idx.size:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got {idx.dtype}")
    idx = idx.astype(np.int64).reshape(idx.shape if idx.ndim == 2 else (-1, 0))
    if isinstance(values, Tensor):
        vals = values if dtype is None else values.to(dtype)
    else:
        vals = tensor(values, dtype=dtype)
    if device is not None and str(device) != vals.device:
        vals = vals.to(str(device))
    if vals.ndim != 1:
        raise RuntimeError(
            f"sparse_coo_tensor: values must be 1-D (nnz,), got shape {list(vals.shape)} "
            "(hybrid sparse tensors with dense dimensions are not supported)"
        )
    if idx.ndim != 2 or idx.shape[1] != vals.shape[0]:
        raise RuntimeError(
            f"sparse_coo_tensor: indices of shape {list(idx.shape)} do not match values of "
            f"shape {list(vals.shape)}; expected indices of shape [ndim, {vals.shape[0]}]"
        )
    if (idx < 0).any():
        raise RuntimeError("sparse_coo_tensor: found negative index")
    if size is None:
        size = tuple(int(n) + 1 for n in idx.max(axis=1)) if idx.shape[1] else (0,) * len(idx)
    size = tuple(int(n) for n in size)
    if len(size) != idx.shape[0]:
        raise RuntimeError(
            f"sparse_coo_tensor: size {list(size)} has {len(size)} dimensions but indices have "
            f"{idx.shape[0]} rows"
        )
    if idx.shape[1] and (idx.max(axis=1) >= np.asarray(size)).any():
        raise RuntimeError(
            f"sparse_coo_tensor: indices out of bounds: max index per dimension "
            f"{idx.max(axis=1).tolist()} for size {list(size)}"
        )
    if vals._rg and vals.grad_fn is None and not requires_grad:
        vals = vals.view(vals.shape)  # as PyTorch: built from a leaf, s is not a leaf itself
    s = SparseTensor._make(idx, vals, size, bool(is_coalesced))
    if requires_grad:
        if vals.grad_fn is not None or vals is values:
            vals = vals.detach()
            s._vals = vals
        s.requires_grad_(True)
    return s


def to_sparse(input: Tensor, sparse_dim=None) -> SparseTensor:
    """The sparse COO tensor of the nonzero entries of a dense tensor (coalesced). The
    values are gathered from ``input``, so the gradient reaches it at those entries."""
    if isinstance(input, SparseTensor):
        return input
    if sparse_dim is not None and sparse_dim != input.ndim:
        raise NotImplementedError(
            f"to_sparse(sparse_dim={sparse_dim}): only sparse_dim == ndim ({input.ndim}) is "
            "supported (no hybrid sparse tensors)"
        )
    data = input._data
    idx = np.stack(np.nonzero(data)).astype(np.int64).reshape(data.ndim, -1)
    flat = _linear(idx, data.shape)
    values = input.reshape(-1)[Tensor._wrap(flat)]
    return SparseTensor._make(idx, values, data.shape, True)


def _dense_to_dense(self) -> Tensor:
    """``to_dense()`` of a dense tensor is the tensor itself (as PyTorch)."""
    return self


Tensor.to_sparse = to_sparse
Tensor.to_dense = _dense_to_dense
