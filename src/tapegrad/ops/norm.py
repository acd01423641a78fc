"""Norms: vector_norm (the primitive), matrix_norm, Tensor.norm and linalg.norm.

vector_norm, with a = |x| and N = the norm over the reduced dims:
    ord 2:    d/dx = g·x/N, and 0 where N = 0 (PyTorch's subgradient at the origin)
    ord 1:    d/dx = g·sign(x)
    ord ±inf: d/dx = g·sign(x)/k at the k entries with a = N, else 0
    ord 0:    the count of non-zeros; d/dx = 0
    other p:  d/dx = g·sign(x)·a^(p−1)/N^(p−1), 0 where x = 0 or N = 0
The zeros at N = 0 (and x = 0 for p < 1) are masked like PyTorch's, so a second
derivative through them is NaN there as in torch (0·inf), not a made-up 0.
matrix_norm composes vector ops ('fro', 1, −1, inf, −inf).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _trace
from ..autograd.graph import make_result
from ..tensor import _check_dim
from ._mathutil import const, unreduce
from ._registry import register
from ._util import float_data, normalize_dims, reduce_grad
from .elementwise import where

__all__ = ["vector_norm", "matrix_norm", "norm", "linalg_norm"]


@register("vector_norm", function=False, method=False)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all elements when None), treated as a vector.

    Args:
        x: input tensor; integer tensors compute in the default float dtype.
        ord: a number (2, 1, 0, other p > 0), ``inf`` or ``-inf``.
        dim: int or tuple of dims to reduce; None flattens.
        keepdim: keep reduced dims with size 1.
        dtype: cast the input to this dtype first.

    >>> import tapegrad as tg
    >>> tg.linalg.vector_norm(tg.tensor([3.0, 4.0]))
    tensor(5.)
    """
    if isinstance(ord, str):
        raise TypeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if dtype is not None:
        x = x.to(dtype)
    data = float_data(x)
    dims = normalize_dims(dim, data.ndim, "linalg.vector_norm")
    p = float(ord)
    if (p < 0 or math.isinf(p)) and any(data.shape[d] == 0 for d in dims):
        empty = next(d for d in dims if data.shape[d] == 0)
        raise RuntimeError(  # the min/max behind these norms has no identity (as PyTorch)
            f"linalg.vector_norm: cannot compute the {ord} norm on the dimension {empty} "
            f"because this dimension is empty and the operation does not have an identity "
            f"(a tensor of shape {list(data.shape)})"
        )
    a = np.abs(data)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if p == 2:
            out = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        elif p == 1:
            out = np.sum(a, axis=dims, keepdims=keepdim)
        elif math.isinf(p):
            out = (np.max if p > 0 else np.min)(a, axis=dims, keepdims=keepdim)
        elif p == 0:
            out = np.sum(a != 0, axis=dims, keepdims=keepdim).astype(data.dtype)
        else:
            out = np.sum(a**p, axis=dims, keepdims=keepdim) ** (1.0 / p)
    out = np.asanyarray(out, dtype=data.dtype)
    shape = data.shape

    def backward(g, out):
        gk = unreduce(g, shape, dims, keepdim)
        xd = x._data
        if p == 0:  # no gradient at all, as torch's (None through allow_unused=True)
            return (None,)
        # sign(x) as the op, not a constant: a create_graph gradient is then a function of
        # x (derivative 0), as torch's, so grad(gx, x, allow_unused=True) gives zeros.
        if p == 1:
            return (gk * x.sign(),)
        n = unreduce(out, shape, dims, keepdim)
        if math.isinf(p):
            mask = np.abs(xd) == n._data
            share = mask / np.sum(mask, axis=dims, keepdims=True)
            return (gk * x.sign() * const(share.astype(g._data.dtype, copy=False)),)
        origin = n._data == 0
        masked = _trace.recording() or origin.any()  # (a replay cannot branch on values)
        if p == 2:
            return (gk * (_masked_div(x, n, origin) if masked else x / n),)
        if p < 1:  # sign(x)·|x|^(p−1) masked at x = 0, times N^(1−p)
            zero = xd == 0
            scaled = _masked_div(const(np.sign(xd)), x.abs() ** (1 - p), zero)
            return (scaled * gk * n ** (1 - p),)
        scaled = const(np.sign(xd)) * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
        denom = n ** (p - 1)
        return (scaled * (_masked_div(gk, denom, origin) if masked else gk / denom),)

    return make_result(
        out, (x,), backward, "LinalgVectorNormBackward", saved=(x,), save_output=True
    )


def _masked_div(a, b, mask):
    """``a / b``, and 0 where ``mask`` (there b = 0): PyTorch's ``(a / b).masked_fill_(mask, 0)``.

    As in torch, the derivatives at the masked entries are NaN (torch's 0 / 0 there), so a
    second derivative of a norm through its masked origin is NaN as in torch, not a
    made-up 0; computed without dividing by zero (no warning, also in a jit replay).
    """
    safe = np.where(mask, 1, b._data)
    out = np.where(mask, 0, a._data / safe).astype(np.result_type(a._data, b._data), copy=False)

    def backward(g, out):
        sb = where(mask, 1.0, b)
        ga = where(mask, math.nan, g / sb)
        gb = where(mask, math.nan, -(g * out) / sb)
        return reduce_grad(ga, a), reduce_grad(gb, b)

    return make_result(out, (a, b), backward, "MaskedDivBackward", saved=(b,), save_output=True)


def _two_dims(dim, ndim, op):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim!r}")
    d0, d1 = (_check_dim(d, ndim, op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different, got {dim!r}")
    return d0, d1


@register("matrix_norm", function=False, method=False)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf.

    1 / -1: the largest / smallest column sum of |A|; inf / -inf: the same over rows.
    2 / -2: the largest / smallest singular value; 'nuc': their sum.
    """
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: needs at least 2 dims, got shape {list(A.shape)}")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _two_dims(dim, A.ndim, "linalg.matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in (2, -2, "nuc"):  # from the singular values (SVD gradient)
        from .decomp import svdvals  # noqa: PLC0415 - decomp builds on this layer

        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = S.sum(-1) if ord == "nuc" else (S.amax(-1) if ord == 2 else S.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: unsupported ord {ord!r}")
    summed, across = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = A.abs().sum(dim=summed, keepdim=True)
    if ord > 0:
        # The largest of no (non-negative) sums is 0, as in PyTorch; amax would raise.
        empty = A.shape[across] == 0
        out = sums.sum(dim=across, keepdim=True) if empty else sums.amax(dim=across, keepdim=True)
    elif A.shape[across] == 0:
        raise IndexError(
            f"linalg.matrix_norm: ord={ord} takes a minimum over dim {across}, which is empty "
            f"in a tensor of shape {list(A.shape)}"
        )
    else:
        out = sums.amin(dim=across, keepdim=True)
    if not keepdim:
        out = out.reshape(tuple(n for i, n in enumerate(A.shape) if i not in (d0, d1)))
    return out


@register("norm")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: 'fro' (the 2-norm of the elements) or a vector ``p``-norm over ``dim``.

    >>> import tapegrad as tg
    >>> tg.tensor([[3.0, 0.0], [0.0, 4.0]]).norm()
    tensor(5.)
    """
    if p == "fro":
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError(f"norm: 'fro' takes at most 2 dims, got dim={dim!r}")
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if p == "nuc":
        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if isinstance(p, str):
        raise RuntimeError(f"norm: unknown norm p={p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


@register("linalg_norm", function=False, method=False)
def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``tg.linalg.norm``: a vector norm for an int ``dim`` or 1-D input, a matrix norm for a
    pair of dims or 2-D input; with ``ord=None``, the 2-norm of the flattened input."""
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if dim is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype)
        if A.ndim == 1:
            return vector_norm(A, ord, None, keepdim, dtype=dtype)
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        raise RuntimeError(
            f"linalg.norm: with ord={ord!r} and dim=None the input must be 1-D or 2-D, "
            f"got shape {list(A.shape)}"
        )
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: dim must have 1 or 2 entries, got {dim!r}")
