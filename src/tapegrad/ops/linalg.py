"""Matrix products: ``matmul`` / ``@`` (1-D promotion, broadcast batch axes) and ``outer``.

For C = A @ B:  dA = g @ Bᵀ,  dB = Aᵀ @ g,  each summed back over broadcast
batch axes; a 1-D operand is promoted to a matrix and the promotion undone.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..autograd import forward_ad
from ..autograd.graph import (
    arrays_of,
    batched_shape,
    fresh_array,
    make_result,
    sum_to,
    sum_to_array,
)
from ..tensor import Tensor
from . import _dtype_errors
from ._registry import register
from ._util import as_tensor

__all__ = ["matmul", "outer"]


@register("matmul", operators=("__matmul__",))
def matmul(input, other):
    """Matrix product with NumPy's rules: 1-D operands are promoted, batch axes broadcast."""
    if input.__class__ is not Tensor and getattr(input, "is_sparse", False):
        return input @ other  # a sparse COO tensor (tapegrad.sparse)
    a = as_tensor(input, "matmul")
    b = as_tensor(other, "matmul")
    ad, bd = a._data, b._data
    if ad.ndim == 0 or bd.ndim == 0:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {list(ad.shape)} "
            f"and {list(bd.shape)}"
        )
    if ad.dtype != bd.dtype:  # torch does not promote here
        raise _dtype_errors.matmul_error(ad, bd)
    k_a = ad.shape[-1]
    k_b = bd.shape[0] if bd.ndim == 1 else bd.shape[-2]
    if k_a != k_b:
        raise RuntimeError(
            f"matmul: shapes {list(ad.shape)} and {list(bd.shape)} cannot be multiplied "
            f"({k_a} != {k_b})"
        )
    try:
        out = matmul_array(ad, bd)
    except ValueError:
        raise RuntimeError(
            f"matmul: batch dimensions of shapes {list(ad.shape)} and {list(bd.shape)} "
            "cannot be broadcast"
        ) from None
    out = _dtypes.fix_float_result(np.asanyarray(out), ad.dtype, bd.dtype)
    na, nb = a._rg, b._rg

    def backward(g):
        A = a if ad.ndim > 1 else a.reshape(1, -1)
        B = b if bd.ndim > 1 else b.reshape(-1, 1)
        G = g
        if bd.ndim == 1:  # restore the promoted trailing m = 1
            G = G.reshape(G._data.shape + (1,))
        if ad.ndim == 1:  # restore the promoted n = 1 before it
            G = G.reshape(G._data.shape[:-1] + (1,) + G._data.shape[-1:])
        # No casts: a, b and g share one dtype (matmul refuses mixed dtypes, the engine
        # hands g in the output's, and a product of one dtype keeps it, bfloat16 too).
        ga = gb = None
        if na:
            ga = sum_to(G @ B.mT, A._data.shape).reshape(batched_shape(ad.shape))
        if nb:
            gb = sum_to(A.mT @ G, B._data.shape).reshape(batched_shape(bd.shape))
        return ga, gb

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        if ad.ndim < 2 or bd.ndim < 2:  # a promoted vector: the Tensor rule's reshapes
            return arrays_of(backward(Tensor._wrap(g)))
        # G @ B.mT and A.mT @ G as matmul computes them, summed back over broadcast
        # batch axes (as sum_to); the dtypes match (matmul refuses mixed ones)
        ga = gb = None
        if na:
            ga = _fresh_sum(matmul_array(g, np.swapaxes(b._data, -2, -1)), ad.shape)
        if nb:
            gb = _fresh_sum(matmul_array(np.swapaxes(a._data, -2, -1), g), bd.shape)
        return ga, gb

    saved = tuple(t for t, need in ((b, na), (a, nb)) if need)
    return make_result(
        out, (a, b), backward, "MatmulBackward", saved=saved, array_backward=array_backward
    )


def _fresh_sum(product, shape):
    """A GEMM's result summed back to ``shape``: a new array either way (Note [Fresh
    gradients]), unless a GEMM of zero size gave a broadcast one."""
    out = sum_to_array(product, shape)
    return fresh_array(out) if out.flags.writeable else out


def matmul_array(a, b):
    """``np.matmul(a, b)``; a stack of C-contiguous matrices times one matrix runs as one
    2-D GEMM over the stacked rows: NumPy would call BLAS once per matrix of the stack,
    about a third slower for the (batch, tokens, features) @ weight of a transformer.
    bfloat16 operands multiply in float32, the product rounded to bfloat16 once, as torch's
    CPU kernel (Note [bfloat16 opmath] in _dtypes.py; NumPy would give float32)."""
    if a.dtype.kind == "V":
        f32 = _dtypes.float32
        return matmul_array(a.astype(f32), b.astype(f32)).astype(a.dtype)
    if a.ndim > 2 and b.ndim == 2 and a.size and a.flags.c_contiguous:
        return np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[1:])
    if b.ndim > 2 and a.ndim == b.ndim and a.size and not any(b.strides[:-2]):
        # A stride-0 stack of one matrix (an unbatched weight expanded under vmap, Note
        # [grad under vmap]): one 2-D GEMM over the rows of ``a`` instead of one per matrix.
        if a.shape[:-2] == b.shape[:-2]:
            a2 = a.reshape(-1, a.shape[-1])  # a copy only where ``a`` is not contiguous
            b2 = b[(0,) * (b.ndim - 2)]
            return _gemm_rows(a2, b2, a.shape[-2]).reshape(a.shape[:-1] + b.shape[-1:])
    if a.shape[-1:] == (1,) and a.ndim > 1 and b.ndim > 1 and a.ndim + b.ndim > 4:
        # Batched outer products (per-sample weight gradients under vmap): NumPy's matmul
        # takes a slow non-BLAS loop for k = 1 (einsum: 7x faster); exact either way.
        return np.einsum("...ik,...kj->...ij", a, b)
    return np.matmul(a, b)


def _gemm_rows(a2, b2, rows):
    """``a2 @ b2`` in blocks of rows small enough (m·k·n <= 2^18) that OpenBLAS runs each
    on one thread, never smaller than ``rows`` (at most as many calls as one per matrix):
    its threads spin against a busy machine's other processes (10x slower on 2 loaded
    cores), and one thread is as fast at these sizes. Bit-identical to one GEMM."""
    step = max(rows, 1, (1 << 18) // max(1, b2.shape[0] * b2.shape[1]))
    m = a2.shape[0]
    if m <= step:
        return np.matmul(a2, b2)
    first = np.matmul(a2[:step], b2)
    out = np.empty((m,) + first.shape[1:], first.dtype)
    out[:step] = first
    for i in range(step, m, step):
        np.matmul(a2[i : i + step], b2, out=out[i : i + step])
    return out


Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
Tensor.mm = matmul
Tensor.bmm = matmul


@register("outer")
def outer(input, vec2):
    """The outer product of two 1-D tensors: out[i, j] = a[i]·b[j].

    d/da = g @ b,  d/db = gᵀ @ a.
    """
    a = as_tensor(input, "outer")
    b = as_tensor(vec2, "outer")
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(
            f"outer: expected two 1-D tensors, got shapes {list(a.shape)} and {list(b.shape)}"
        )
    out = _dtypes.fix_float_result(np.asanyarray(np.outer(a._data, b._data)), a.dtype, b.dtype)
    na, nb = a._rg, b._rg

    def backward(g):
        ga = gb = None
        dt = g._data.dtype  # outer promotes mixed dtypes; matmul does not (as torch)
        if na:
            ga = g @ (b if b._data.dtype == dt else b._cast(dt))
            if ga._data.dtype != a._data.dtype:
                ga = ga._cast(a._data.dtype)
        if nb:
            gb = g.mT @ (a if a._data.dtype == dt else a._cast(dt))
            if gb._data.dtype != b._data.dtype:
                gb = gb._cast(b._data.dtype)
        return ga, gb

    saved = tuple(t for t, need in ((b, na), (a, nb)) if need)
    return make_result(out, (a, b), backward, "OuterBackward", saved=saved)


Tensor.ger = outer


def _matmul_jvp(tans, inputs, outs):
    """``ta @ b + a @ tb`` (matmul is bilinear); unbatched tangents only."""
    (a, b), (ta, tb) = inputs, tans
    t = None if ta is None else matmul(ta, b)
    if tb is not None:
        t = matmul(a, tb) if t is None else t + matmul(a, tb)
    return [t]


forward_ad.JVP_RULES["MatmulBackward"] = _matmul_jvp  # Note [Forward-mode tangents]
