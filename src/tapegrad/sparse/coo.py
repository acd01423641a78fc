"""The sparse COO tensor: coalesce, indices/values, to_dense, sums, transpose, + and *.

Note [Sparse tensors in the graph]
A :class:`SparseTensor` is indices (an int64 array, ``(sparse_dim, nnz)``) plus a dense
values Tensor (``(nnz,)``) and a shape. Only the values Tensor takes part in autograd:
every op on a sparse tensor (``to_dense``, ``coalesce``, ``sum``, ``spmm``) is a function
of ``values`` and records through ``make_result`` like any op, so the gradient of a
sparse operand arrives at its values (and from there at whatever computed them, e.g.
GAT attention scores). A sparse leaf made with ``requires_grad=True`` owns a values
leaf; its ``.grad`` is that leaf's gradient with the leaf's indices (PyTorch's sparse
gradient). ``coalesce`` and ``to_dense`` are composed of ``scatter_add``, and
``to_sparse`` of indexing, so they are differentiable to any order with no rule of
their own.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..creation import zeros
from ..tensor import Tensor
from .layout import sparse_coo

__all__ = ["SparseTensor", "sparse_sum"]


class SparseTensor(Tensor):
    """A sparse COO tensor (layout ``sparse_coo``); see Note [Sparse tensors in the graph].

    Made by :func:`sparse_coo_tensor` or ``dense.to_sparse()``. Supports ``coalesce``,
    ``indices``/``values`` (coalesced), ``_indices``/``_values``, ``to_dense``, ``sum``,
    ``t``/``transpose``, multiplication by a number, and ``sparse @ dense``
    (``tg.sparse.mm``, ``tg.spmm``) with gradients to both operands.

    >>> import tapegrad as tg
    >>> s = tg.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> (s @ tg.ones(2, 1)).tolist()
    [[2.0], [3.0]]
    """

    __slots__ = ("_idx", "_vals", "_sshape", "_is_coalesced", "_values_leaf")

    is_sparse = True
    layout = sparse_coo

    def __init__(self, *args, **kwargs):
        raise TypeError("build sparse tensors with tapegrad.sparse_coo_tensor or x.to_sparse()")

    # -- construction ---------------------------------------------------------------------

    @staticmethod
    def _make(indices, values: Tensor, shape: tuple, coalesced: bool) -> SparseTensor:
        s = object.__new__(SparseTensor)
        s._idx = indices
        s._vals = values
        s._sshape = tuple(int(n) for n in shape)
        s._is_coalesced = coalesced
        s._values_leaf = False
        s.grad_fn = None
        s._rg = False
        s._output_nr = 0
        s._vc_ = None
        s._accumulator = None
        s._hooks = None
        s._post_hooks = None
        s._retains_grad = False
        s._base = None
        return s

    # -- what Tensor reads from _data -------------------------------------------------------

    @property
    def _data(self):
        """Dense ops read ``_data``; a sparse tensor has none, so they stop here, clearly."""
        import sys  # noqa: PLC0415

        from ..ops._registry import OPS  # noqa: PLC0415

        frame = sys._getframe(1)
        for _ in range(8):  # the op that asked, past its helpers
            if frame is None or frame.f_code.co_name in OPS:
                break
            frame = frame.f_back
        caller = (frame or sys._getframe(1)).f_code.co_name.strip("_")
        raise NotImplementedError(
            f"{caller}: not supported for sparse COO tensors (shape {list(self._sshape)}); "
            "call .to_dense() first, or use the sparse ops (coalesce, to_dense, sum, t, "
            "+ and * by a number, tapegrad.sparse.mm)"
        )

    def to_scipy(self):
        """The ``scipy.sparse.coo_array`` of this 2-D tensor's current values (a copy)."""
        import scipy.sparse as sp  # noqa: PLC0415 - loaded with the first use

        return sp.coo_array((self._vals._data.copy(), tuple(self._idx)), shape=self._sshape)

    @property
    def shape(self) -> tuple:
        return self._sshape

    @property
    def dtype(self):
        return self._vals._data.dtype

    @property
    def ndim(self) -> int:
        return len(self._sshape)

    def dim(self) -> int:
        return len(self._sshape)

    def size(self, dim=None):
        return self._sshape if dim is None else self._sshape[dim]

    def numel(self) -> int:
        return int(np.prod(self._sshape))

    @property
    def device(self):
        return self._vals.device

    # -- autograd: through the values (Note [Sparse tensors in the graph]) -------------------

    @property
    def requires_grad(self) -> bool:
        return self._vals._rg

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        if self._vals.grad_fn is not None:
            raise RuntimeError("requires_grad_ on a sparse tensor that is not a leaf")
        self._vals.requires_grad_(requires_grad)
        self._values_leaf = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        if value is not None:
            raise RuntimeError("a sparse tensor's grad_fn is its values' grad_fn")

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def grad(self):
        """A sparse leaf's gradient: its values' gradient with its indices (as PyTorch)."""
        g = self._vals.grad if self._values_leaf else None
        if g is None:
            return None
        if self._is_coalesced:
            return SparseTensor._make(self._idx, g, self._sshape, True)
        # d(loss)/d(entry) depends only on the entry's position (every sparse op here is
        # linear in the values), so repeated indices carry equal gradients: keep one each.
        flat = _linear(self._idx, self._sshape)
        uniq, first = np.unique(flat, return_index=True)
        indices = np.stack(np.unravel_index(uniq, self._sshape)).astype(np.int64)
        indices = indices.reshape(len(self._sshape), -1)
        return SparseTensor._make(indices, Tensor._wrap(g._data[first]), self._sshape, True)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
            return
        raise RuntimeError("assigning .grad of a sparse tensor is not supported; set it to None")

    @property
    def data(self) -> SparseTensor:
        """The same sparse tensor, detached from the graph (shares indices and values)."""
        return self.detach()

    def detach(self) -> SparseTensor:
        return SparseTensor._make(self._idx, self._vals.detach(), self._sshape, self._is_coalesced)

    def clone(self) -> SparseTensor:
        return SparseTensor._make(
            self._idx.copy(), self._vals.clone(), self._sshape, self._is_coalesced
        )

    # -- the sparse API ---------------------------------------------------------------------

    def is_coalesced(self) -> bool:
        return self._is_coalesced

    def sparse_dim(self) -> int:
        return len(self._sshape)

    def dense_dim(self) -> int:
        return 0

    def _nnz(self) -> int:
        return int(self._idx.shape[1])

    def _indices(self) -> Tensor:
        return Tensor._wrap(self._idx)

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        """The indices, ``(sparse_dim, nnz)`` int64; the tensor must be coalesced."""
        if not self._is_coalesced:
            raise RuntimeError(
                "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
            )
        return Tensor._wrap(self._idx)

    def values(self) -> Tensor:
        """The values, ``(nnz,)``, differentiable; the tensor must be coalesced."""
        if not self._is_coalesced:
            raise RuntimeError(
                "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
            )
        return self._vals

    def coalesce(self) -> SparseTensor:
        """Indices sorted and unique, duplicate entries summed (differentiable)."""
        if self._is_coalesced:
            return self
        flat = _linear(self._idx, self._sshape)
        uniq, inverse = np.unique(flat, return_inverse=True)
        indices = np.stack(np.unravel_index(uniq, self._sshape)).astype(np.int64)
        indices = indices.reshape(len(self._sshape), -1)
        values = _scatter_sum(self._vals, inverse.reshape(-1), len(uniq))
        return SparseTensor._make(indices, values, self._sshape, True)

    def to_dense(self) -> Tensor:
        """The dense tensor; differentiable with respect to the values."""
        n = self.numel()
        flat = _scatter_sum(self._vals, _linear(self._idx, self._sshape), n)
        return flat.reshape(self._sshape)

    def to_sparse(self) -> SparseTensor:
        return self

    def sum(self, dim=None, keepdim=False, dtype=None):
        return sparse_sum(self, dim)

    def t(self) -> SparseTensor:
        if self.ndim != 2:
            raise RuntimeError(f"t() expects a 2-D sparse tensor, got {self.ndim}-D")
        return self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        order = list(range(self.ndim))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        shape = tuple(self._sshape[i] for i in order)
        return SparseTensor._make(self._idx[order], self._vals, shape, False)

    def _scaled(self, factor) -> SparseTensor:
        return SparseTensor._make(self._idx, self._vals * factor, self._sshape, self._is_coalesced)

    def __mul__(self, other):
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self._scaled(other)
        return NotImplemented if not isinstance(other, Tensor) else _unsupported("mul")

    __rmul__ = __mul__

    def __add__(self, other):
        if isinstance(other, SparseTensor):
            return _sparse_add(self, other, 1)
        if isinstance(other, Tensor):
            raise RuntimeError(
                "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
            )
        return NotImplemented

    def __sub__(self, other):
        if isinstance(other, SparseTensor):
            return _sparse_add(self, other, -1)
        if isinstance(other, Tensor):
            raise RuntimeError("sub(sparse, dense) is not supported. Use sub(dense, sparse).")
        return NotImplemented

    def __truediv__(self, other):
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self._scaled(1.0 / other)
        return _unsupported("div")

    def __neg__(self):
        return self._scaled(-1)

    def __matmul__(self, other):
        from .mm import mm  # noqa: PLC0415 - mm imports this module

        return mm(self, other)

    def mm(self, other):
        return self.__matmul__(other)

    def to(self, *args, dtype=None, device=None, copy=False):
        values = self._vals.to(*args, dtype=dtype, device=device, copy=copy)
        if values is self._vals:
            return self
        return SparseTensor._make(self._idx, values, self._sshape, self._is_coalesced)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            from ..legacy import _NAME_OF  # noqa: PLC0415

            return f"torch.sparse.{_NAME_OF[self.dtype]}"
        return _unsupported("type(dtype)")

    def numpy(self):
        raise TypeError("numpy() of a sparse tensor: call .to_dense().numpy() first")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a sparse tensor cannot become a NumPy array: call .to_dense() first")

    def tolist(self):
        return self.to_dense().tolist()

    def __len__(self) -> int:
        return self._sshape[0]

    def __repr__(self) -> str:
        idx = np.array2string(self._idx, separator=", ", prefix="       indices=tensor(")
        val = np.array2string(self._vals._data, separator=", ", prefix="       values=tensor(")
        extras = ""
        if self.dtype != _dtypes.get_default_dtype():
            extras += f", dtype=tapegrad.{self.dtype}"
        if self.grad_fn is not None:
            extras += f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extras += ", requires_grad=True"
        return (
            f"tensor(indices=tensor({idx}),\n       values=tensor({val}),\n"
            f"       size={self._sshape}, nnz={self._nnz()}, layout=tapegrad.sparse_coo{extras})"
        )


def _sparse_add(a: SparseTensor, b: SparseTensor, sign) -> SparseTensor:
    """``a + sign * b`` of two sparse tensors of one shape: the entries of both, coalesced."""
    from ..ops.joining import cat  # noqa: PLC0415

    if a._sshape != b._sshape:
        raise RuntimeError(
            f"add: sparse tensors of shapes {list(a._sshape)} and {list(b._sshape)} must "
            "have the same shape"
        )
    if a.dtype != b.dtype:
        raise RuntimeError(f"add: sparse tensors of dtypes {a.dtype} and {b.dtype} differ")
    values = cat([a._vals, b._vals if sign == 1 else -b._vals])
    indices = np.concatenate([a._idx, b._idx], axis=1)
    return SparseTensor._make(indices, values, a._sshape, False).coalesce()


def _unsupported(op):
    raise NotImplementedError(
        f"{op} is not implemented for sparse COO tensors; call .to_dense() first, or use "
        "the sparse ops (coalesce, to_dense, sum, t, *, tapegrad.sparse.mm)"
    )


def _linear(indices, shape):
    if indices.shape[1] == 0:
        return np.zeros(0, np.int64)
    return np.ravel_multi_index(tuple(indices), shape).astype(np.int64)


def _scatter_sum(values: Tensor, positions, n: int) -> Tensor:
    """``out[positions[k]] += values[k]`` into ``n`` zeros, through scatter_add (differentiable)."""
    out = zeros(n, dtype=values._data.dtype)
    return out.scatter_add(0, Tensor._wrap(np.asarray(positions, np.int64)), values)


def sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: a dense 0-d tensor over every dimension, else a sparse tensor
    of the dimensions kept (coalesced)."""
    if not isinstance(input, SparseTensor):
        return input.sum() if dim is None else input.sum(dim)
    values = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return values.sum()
    dims = {d % input.ndim for d in ((dim,) if isinstance(dim, int) else tuple(dim))}
    keep = [d for d in range(input.ndim) if d not in dims]
    if not keep:
        return values.sum()
    shape = tuple(input._sshape[d] for d in keep)
    return SparseTensor._make(input._idx[keep], values, shape, False).coalesce()
