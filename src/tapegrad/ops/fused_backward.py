"""Fused gradient rules: ``tanh_backward`` and ``sigmoid_backward``, as in PyTorch's aten.

The rules of tanh and sigmoid, ``g·(1 − y²)`` and ``g·y·(1 − y)``, are three tapegrad
ops each when written out; on the small tensors where per-op overhead dominates, one
op costs a third. Each is a differentiable op of its own (``(grad, output)`` in, one
tensor out), with its derivative written in tapegrad ops, so ``create_graph=True``
still yields every higher order (Note [Batched gradients]: the gradient of ``output``
is summed back with ``reduce_grad``, which keeps a batch prefix). Products are taken in
PyTorch's order (its CPU kernels and derivatives.yaml), so float32 results round alike.

    tanh_backward(g, y)    = g·(1 − y²)    d/dg = 1 − y²     d/dy = −2·g·y
    sigmoid_backward(g, y) = g·y·(1 − y)   d/dg = y·(1 − y)  d/dy = g·(1 − 2y)
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from ._registry import register
from ._util import reduce_grad

__all__ = ["tanh_backward", "sigmoid_backward", "tanh_backward_array", "sigmoid_backward_array"]

# 0-d ones per dtype: NumPy takes a 0-d array operand in about half the time of a
# Python scalar on small arrays (and, having the array's own dtype, it changes no dtype).
_ONES: dict = {}


def _one(dtype):
    one = _ONES.get(dtype)
    if one is None:
        one = _ONES[dtype] = np.ones((), dtype)
    return one


def tanh_backward_array(g, y):
    """``g · (1 − y²)`` on arrays: the kernel of :func:`tanh_backward`."""
    one = _ONES.get(y.dtype)
    if one is None:
        one = _one(y.dtype)
    return g * np.subtract(one, y * y)


def sigmoid_backward_array(g, y):
    """``g · y · (1 − y)`` on arrays, in PyTorch's order ``(g·(1 − y))·y``: the kernel
    of :func:`sigmoid_backward`."""
    one = _ONES.get(y.dtype)
    if one is None:
        one = _one(y.dtype)
    out = g * np.subtract(one, y)
    out *= y
    return out


@register("_tanh_backward", method=False)
def tanh_backward(grad, output):
    """``grad · (1 − output²)``: the gradient of tanh given its output."""
    out = tanh_backward_array(grad._data, output._data)
    if not (STATE.enabled and (grad._rg or output._rg)):
        return Tensor._wrap(out)

    def backward(gg):
        return (
            reduce_grad(tanh_backward(gg, output), grad) if grad._rg else None,
            reduce_grad(gg * (output * -2.0 * grad), output) if output._rg else None,
        )

    return make_result(out, (grad, output), backward, "TanhBackwardBackward", saved=(grad, output))


@register("_sigmoid_backward", method=False)
def sigmoid_backward(grad, output):
    """``grad · output · (1 − output)``: the gradient of sigmoid given its output."""
    out = sigmoid_backward_array(grad._data, output._data)
    if not (STATE.enabled and (grad._rg or output._rg)):
        return Tensor._wrap(out)

    def backward(gg):
        return (
            reduce_grad(sigmoid_backward(gg, output), grad) if grad._rg else None,
            reduce_grad(gg * grad * (output * -2.0 + 1.0), output) if output._rg else None,
        )

    return make_result(
        out, (grad, output), backward, "SigmoidBackwardBackward", saved=(grad, output)
    )
