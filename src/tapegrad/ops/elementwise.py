"""Elementwise functions of one tensor, and ``where``.

Each rule states its derivative; rules that read the result (exp, sqrt, tanh,
sigmoid, relu) save the output array, not the input, and receive it back as
``out`` (Note [Saved outputs] in autograd/graph.py explains why no cycle forms).
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor
from ._registry import register
from ._util import as_tensor_or_scalar, broadcast_error, float_data, reduce_grad

__all__ = ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "where"]


@register("exp")
def exp(input):
    """e^x.  d/dx = out."""
    out = np.exp(float_data(input))
    return make_result(out, (input,), _exp_backward, "ExpBackward", save_output=True)


def _exp_backward(g, out):
    return (g * out,)


@register("log")
def log(input):
    """Natural log.  d/dx = 1/x."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(float_data(input))

    def backward(g):
        return (g / input,)

    return make_result(out, (input,), backward, "LogBackward", saved=(input,))


@register("sqrt")
def sqrt(input):
    """√x.  d/dx = 1 / (2·out)."""
    with np.errstate(invalid="ignore"):
        out = np.sqrt(float_data(input))
    return make_result(out, (input,), _sqrt_backward, "SqrtBackward", save_output=True)


def _sqrt_backward(g, out):
    return (g / (out * 2.0),)


@register("tanh")
def tanh(input):
    """tanh x.  d/dx = 1 − out²."""
    out = np.tanh(float_data(input))
    return make_result(out, (input,), _tanh_backward, "TanhBackward", save_output=True)


def _tanh_backward(g, out):
    return (g * (1.0 - out * out),)


@register("sigmoid")
def sigmoid(input):
    """1 / (1 + e^−x), computed without overflow.  d/dx = out·(1 − out)."""
    # sigmoid(x) = (1 + tanh(x/2)) / 2: no exp, so no overflow for any x.
    out = np.tanh(float_data(input) * 0.5)
    out *= 0.5
    out += 0.5
    return make_result(out, (input,), _sigmoid_backward, "SigmoidBackward", save_output=True)


def _sigmoid_backward(g, out):
    return (g * out * (1.0 - out),)


@register("relu")
def relu(input):
    """max(x, 0).  d/dx = 1 where x > 0, else 0 (relu'(0) = 0, as PyTorch)."""
    out = np.maximum(input.data, 0)
    return make_result(out, (input,), _relu_backward, "ReluBackward", save_output=True)


def _relu_backward(g, out):
    return (g * (out.data > 0),)


@register("where", method=False)
def where(condition, input, other):
    """``input`` where ``condition`` holds, else ``other``; all three broadcast.

    d/dinput = g where condition, 0 elsewhere; d/dother the complement.
    """
    cond = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    ta, da = as_tensor_or_scalar(input, "where")
    tb, db = as_tensor_or_scalar(other, "where")
    try:
        out = np.where(cond, da, db)
    except ValueError:
        raise broadcast_error("where", cond.shape, np.shape(da), np.shape(db)) from None
    if ta is None and tb is not None:
        out = out.astype(tb.data.dtype, copy=False)
    elif tb is None and ta is not None:
        out = out.astype(ta.data.dtype, copy=False)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg

    def backward(g):
        zero = np.zeros((), g.data.dtype)
        ga = reduce_grad(where(cond, g, zero), ta) if na else None
        gb = reduce_grad(where(cond, zero, g), tb) if nb else None
        return ga, gb

    return make_result(out, (ta, tb), backward, "WhereBackward")


def _where_method(self, condition, other):
    return where(condition, self, other)


Tensor.where = _where_method
