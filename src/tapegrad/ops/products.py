"""Products built on matmul and einsum: mm, bmm, mv, dot, vdot, inner, tensordot, the
``add*`` family (addmm, addmv, addr, addbmm, baddbmm), chain_matmul, cross, cdist,
and tg.linalg's multi_dot, vecdot, matrix_power.

Each checks its operands' ranks as PyTorch does (``mm`` wants two matrices) and then
composes ``matmul``/``einsum``, whose rules give every gradient and second derivative.
"""

from __future__ import annotations

import numpy as np

from ..tensor import _check_dim
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor
from .einsum import einsum
from .elementwise import where
from .linalg import matmul, outer

__all__ = [
    "mm",
    "bmm",
    "mv",
    "dot",
    "vdot",
    "inner",
    "tensordot",
    "addmm",
    "addmv",
    "addr",
    "addbmm",
    "baddbmm",
    "chain_matmul",
    "cross",
    "cdist",
    "multi_dot",
    "vecdot",
    "matrix_power",
]


def _rank(op, name, t, ndim):
    if t._data.ndim != ndim:
        what = {1: "1D", 2: "a matrix", 3: "a 3D tensor"}[ndim]
        raise RuntimeError(f"{op}: {name} must be {what}, got shape {list(t._data.shape)}")


def _same_dtype(op, a, b):
    """torch refuses mixed dtypes in its products, each kernel with its own message."""
    da, db = a._data.dtype, b._data.dtype
    if da != db:
        if op == "mm":
            raise _dtype_errors.mm_error(da, db)
        if op == "mv":
            raise _dtype_errors.addmv_error(db, da, db)
        if op == "dot":
            raise _dtype_errors.dot_error(da, db)
        if op == "inner":
            raise RuntimeError("both inputs should have same dtype")
        raise _dtype_errors.scalar_type_error(da, db)


@register("mm")
def mm(input, mat2):
    """Matrix product of two matrices: (n, m) @ (m, p) -> (n, p)."""
    _rank("mm", "self", input, 2)
    _rank("mm", "mat2", mat2, 2)
    if input._data.shape[1] != mat2._data.shape[0]:
        raise RuntimeError(
            f"mm: mat1 and mat2 shapes cannot be multiplied ({input._data.shape[0]}x"
            f"{input._data.shape[1]} and {mat2._data.shape[0]}x{mat2._data.shape[1]})"
        )
    _same_dtype("mm", input, mat2)
    return matmul(input, mat2)


@register("bmm")
def bmm(input, mat2):
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p), no broadcasting."""
    _rank("bmm", "batch1", input, 3)
    _rank("bmm", "batch2", mat2, 3)
    a, b = input._data.shape, mat2._data.shape
    if a[0] != b[0] or a[2] != b[1]:
        raise RuntimeError(
            f"bmm: batch1 and batch2 shapes {list(a)} and {list(b)} cannot be multiplied"
        )
    _same_dtype("bmm", input, mat2)
    return matmul(input, mat2)


@register("mv")
def mv(input, vec):
    """Matrix-vector product: (n, m) @ (m,) -> (n,)."""
    _rank("mv", "self", input, 2)
    _rank("mv", "vec", vec, 1)
    if input._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(
            f"mv: size mismatch, got input ({input._data.shape[0]}x{input._data.shape[1]}) "
            f"and vec ({vec._data.shape[0]})"
        )
    _same_dtype("mv", input, vec)
    return matmul(input, vec)


@register("dot")
def dot(input, tensor, _op="dot"):
    """Inner product of two 1-D tensors of the same size."""
    _rank(_op, "self", input, 1)
    _rank(_op, "tensor", tensor, 1)
    if input._data.shape != tensor._data.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input._data.shape[0]}] and src "
            f"[{tensor._data.shape[0]}] to have the same number of elements (dot)"
        )
    _same_dtype("dot", input, tensor)
    return matmul(input, tensor)


@register("vdot")
def vdot(input, other):
    """:func:`dot` (the first argument would be conjugated; tensors here are real)."""
    return dot(input, other, "vdot")


@register("inner")
def inner(input, other):
    """Sum over the last dims: out[i..., j...] = Σ_k a[i..., k] b[j..., k] (a product
    when either is 0-d)."""
    a, b = as_tensor(input, "inner"), as_tensor(other, "inner")
    if a._data.ndim == 0 or b._data.ndim == 0:
        return a * b
    _same_dtype("inner", a, b)
    if a._data.shape[-1] != b._data.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a._data.shape)} and {list(b._data.shape)}"
        )
    return tensordot(a, b, ([-1], [-1]))


@register("tensordot", method=False)
def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (a count of trailing/leading dims, or two lists) of ``a`` and ``b``."""
    a, b = as_tensor(a, "tensordot"), as_tensor(b, "tensordot")
    _same_dtype("inner", a, b)  # torch's message for both
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, int):
        if dims < 0 or dims > min(na, nb):
            raise RuntimeError(
                f"tensordot expects 0 <= dims <= ndim_a and ndim_b, but got dims={dims} for "
                f"shapes {list(a._data.shape)} and {list(b._data.shape)}"
            )
        da, db = list(range(na - dims, na)), list(range(dims))
    else:
        da, db = dims
        for name, pos, d in (("dims_self", 3, da), ("dims_other", 4, db)):
            if isinstance(d, int):  # torch's: each side a sequence of dims
                raise TypeError(
                    f"tensordot(): argument '{name}' (position {pos}) must be tuple of ints, "
                    "not int"
                )
        da, db = list(da), list(db)
    da = [_check_dim(d, na, "tensordot") for d in da]
    db = [_check_dim(d, nb, "tensordot") for d in db]
    if len(da) != len(db):
        raise RuntimeError("tensordot: both dimension lists should have same length")
    shape_a, shape_b = list(a._data.shape), list(b._data.shape)
    for x, y in zip(da, db):  # a size-1 contracted dim broadcasts against the other, as torch
        if shape_a[x] == 1:
            shape_a[x] = shape_b[y]
        elif shape_b[y] == 1:
            shape_b[y] = shape_a[x]
        if shape_a[x] != shape_b[y]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has size "
                f"{a._data.shape[x]} in dim {x} and second has size {b._data.shape[y]} in dim {y}"
            )
    if tuple(shape_a) != a._data.shape:
        a = a.expand(shape_a)
    if tuple(shape_b) != b._data.shape:
        b = b.expand(shape_b)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    sa = list(letters[:na])
    sb = list(letters[na : na + nb])
    for x, y in zip(da, db):
        sb[y] = sa[x]
    keep = [c for i, c in enumerate(sa) if i not in da] + [
        c for i, c in enumerate(sb) if i not in db
    ]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(keep)}", a, b)


def _zeros_from(t):
    """Zeros of ``t``'s shape, in the graph with a zero gradient to ``t`` (NaN-proof)."""
    return where(const(np.zeros((), bool)), t, const(np.zeros((), t._data.dtype)))


def _add_scaled(input, prod, beta, alpha):
    """beta·input + alpha·prod, with beta = 0 ignoring input (even NaN), as PyTorch."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # input's values (even NaN) are ignored; it gets a zero gradient
        return prod + _zeros_from(input)
    return prod + (input if beta == 1 else input * beta)


@register("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``."""
    _dtype_errors.addmm_check(*(_dt(t) for t in (input, mat1, mat2)))
    return _add_scaled(input, mm(mat1, mat2), beta, alpha)


def _dt(t):
    """The array (for its dtype) of a tensor operand; a Python number as a float32 array."""
    return t._data if hasattr(t, "_data") else np.asarray(t, np.float32)


@register("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    dts = [_dt(t).dtype for t in (input, mat, vec)]
    if len(set(dts)) > 1:
        raise _dtype_errors.addmv_error(*dts)
    return _add_scaled(input, mv(mat, vec), beta, alpha)


@register("addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _rank("addr", "vec1", vec1, 1)
    _rank("addr", "vec2", vec2, 1)
    return _add_scaled(input, outer(vec1, vec2), beta, alpha)


@register("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    dts = [_dt(t).dtype for t in (input, batch1, batch2)]
    if len(set(dts)) > 1:
        names = [_dtype_errors.cpp(d) for d in dts]
        raise RuntimeError(
            f"Input dtypes must be the same, got: input {names[0]}, batch1: {names[1]}, "
            f"batch2: {names[2]}"
        )
    return _add_scaled(input, bmm(batch1, batch2), beta, alpha)


@register("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * Σ_b batch1[b] @ batch2[b]``."""
    _dtype_errors.addmm_check(*(_dt(t) for t in (input, batch1, batch2)))
    return _add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha)


@register("chain_matmul", method=False)
def chain_matmul(*matrices):
    """The product of 2-D matrices, left to right (``linalg.multi_dot`` of the list)."""
    return multi_dot(list(matrices), "chain_matmul")


def multi_dot(tensors, _op="multi_dot"):
    """``tensors[0] @ ... @ tensors[-1]``; the first and last may be 1-D vectors."""
    ts = [as_tensor(t, "multi_dot") for t in tensors]
    if len(ts) < 2:
        raise RuntimeError(f"{_op}(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        ok = t._data.ndim == 2 or (t._data.ndim == 1 and i in (0, len(ts) - 1))
        if not ok:
            raise RuntimeError(
                f"{_op}(): tensor {i} must be 2D (the first and last may be 1D), got shape "
                f"{list(t._data.shape)}"
            )
    for i, t in enumerate(ts[1:], 1):
        if t._data.dtype != ts[0]._data.dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_dtype_errors.cpp(ts[0]._data.dtype)} and tensor {i} "
                f"{_dtype_errors.cpp(t._data.dtype)}"
            )
    out = ts[0]
    for t in ts[1:]:
        out = matmul(out, t)
    return out


@register("cross")
def cross(input, other, dim=None):
    """The 3-D cross product along ``dim`` (the first dim of size 3 when None), broadcasting."""
    a, b = as_tensor(input, "cross"), as_tensor(other, "cross")
    shape = np.broadcast_shapes(a._data.shape, b._data.shape)
    if dim is None:
        dims = [i for i, n in enumerate(shape) if n == 3]
        if not dims:
            raise RuntimeError(f"cross: no dimension of size 3 in input, shape {list(shape)}")
        dim = dims[0]
    return _cross(a, b, dim, shape, "cross")


def _cross(a, b, dim, shape, op):
    d = _check_dim(dim, len(shape), op)
    if shape[d] != 3:
        raise RuntimeError(
            f"{op}: inputs dimension {dim} must have length 3, got shapes "
            f"{list(a._data.shape)} and {list(b._data.shape)}"
        )
    a, b = a.expand(shape), b.expand(shape)
    ax = [a.select(d, i) for i in range(3)]
    bx = [b.select(d, i) for i in range(3)]
    from .joining import stack  # noqa: PLC0415

    return stack(
        [
            ax[1] * bx[2] - ax[2] * bx[1],
            ax[2] * bx[0] - ax[0] * bx[2],
            ax[0] * bx[1] - ax[1] * bx[0],
        ],
        d,
    )


def linalg_cross(input, other, *, dim=-1):
    """``tg.linalg.cross``: the cross product along ``dim`` (default the last), broadcasting."""
    a, b = as_tensor(input, "linalg.cross"), as_tensor(other, "linalg.cross")
    try:
        shape = np.broadcast_shapes(a._data.shape, b._data.shape)
    except ValueError:
        raise RuntimeError(
            f"linalg.cross: shapes {list(a._data.shape)} and {list(b._data.shape)} cannot be "
            "broadcast together"
        ) from None
    return _cross(a, b, dim, shape, "linalg.cross")


def vecdot(x, y, *, dim=-1):
    """``tg.linalg.vecdot``: Σ x·y along ``dim``, broadcasting."""
    x, y = as_tensor(x, "vecdot"), as_tensor(y, "vecdot")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{_dtype_errors.scalar(x._data.dtype)} and y of type "
            f"{_dtype_errors.scalar(y._data.dtype)} instead"
        )
    return (x * y).sum(dim)


@register("matrix_power")
def matrix_power(input, n):
    """``input`` multiplied by itself ``n`` times (the identity for 0, the inverse's power
    for negative ``n``), over the last two dims."""
    shape = input._data.shape
    if len(shape) < 2:  # torch's words
        raise RuntimeError(
            "linalg.matrix_power: The input tensor A must have at least 2 dimensions, got "
            f"shape {list(shape)}"
        )
    if shape[-1] != shape[-2]:
        raise RuntimeError(
            f"matrix_power: expected a tensor of square matrices, got shape {list(shape)}"
        )
    n = int(n)
    if n == 0:
        eye = np.broadcast_to(np.eye(shape[-1], dtype=input._data.dtype), shape)
        return _zeros_from(input) + const(np.ascontiguousarray(eye))
    base = input
    if n < 0:
        base, n = input.inverse(), -n
    result = None
    while n:  # square and multiply
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@register("cdist", method=False)
def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of ``x1`` (…, P, M) and ``x2`` (…, R, M):
    shape (…, P, R)."""
    if x1._data.ndim < 2 or x2._data.ndim < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1._data.ndim}D, "
            f"X2 got: {x2._data.ndim}D"
        )
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1._data.shape[-1]} "
            f"X2: {x2._data.shape[-1]}"
        )
    if x1._data.dtype != x2._data.dtype:
        raise _dtype_errors.scalar_type_error(x1._data.dtype, x2._data.dtype)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    from .norm import vector_norm  # noqa: PLC0415

    return vector_norm(diff, p, dim=-1)
