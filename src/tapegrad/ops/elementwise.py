"""Elementwise functions of one tensor, and ``where``.

Each rule states its derivative; rules that read the result (exp, sqrt, tanh,
sigmoid, relu, expm1, rsqrt, tan) save the output array, not the input, and
receive it back as ``out`` (Note [Saved outputs] in autograd/graph.py explains
why no cycle forms). Integer inputs to float functions compute in float32.
The step functions (sign, floor, ceil, round) have gradient zero, as in PyTorch.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit as _expit

from .. import _dtypes, _fpquiet, _warn
from ..autograd.graph import keeps_arrays, make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor_or_scalar, broadcast_error, float_data, reduce_grad, reduce_grad_array
from .fused_backward import (
    sigmoid_backward,
    sigmoid_backward_array,
    tanh_backward,
    tanh_backward_array,
)

__all__ = [
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "relu",
    "where",
    "abs",
    "sign",
    "log1p",
    "expm1",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "floor",
    "ceil",
    "round",
]


@register("exp")
def exp(input):
    """e^x.  d/dx = out."""
    x = float_data(input)
    token = _fpquiet.enter()  # exp(1e4) = inf silently (Note [No floating-point warnings])
    try:
        out = np.exp(x)
    finally:
        _fpquiet.leave(token)
    return make_result(
        out, (input,), _exp_backward, "ExpBackward", save_output=True, array_backward=_exp_array
    )


def _exp_array(g, out):  # Note [Array backward] in autograd/engine.py
    return (np.multiply(g, out),)


def _exp_backward(g, out):
    if not STATE.enabled:  # Note [First-order fast paths] in arithmetic.py: g and out share a dtype
        return (Tensor._wrap(np.multiply(g._data, out._data)),)
    return (g * out,)


@register("log")
def log(input):
    """Natural log.  d/dx = 1/x."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(float_data(input))

    def backward(g):
        return (g / input,)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (g / input._data,)  # input is a float tensor (it requires grad), as g

    return make_result(
        out, (input,), backward, "LogBackward", saved=(input,), array_backward=array_backward
    )


@register("sqrt")
def sqrt(input):
    """√x.  d/dx = 1 / (2·out)."""
    with np.errstate(invalid="ignore"):
        out = np.sqrt(float_data(input))
    return make_result(
        out,
        (input,),
        _sqrt_backward,
        "SqrtBackward",
        save_output=True,
        array_backward=_sqrt_backward,
    )


# Note [Rules in operators]
# A rule written only in the arithmetic operators (+ - * / and unary -) on g, the saved
# output and Python numbers computes the same ufuncs in the same order on arrays as on
# Tensors (a Python number is weak in both: NEP 50, Note [Scalar operands as 0-d arrays]
# in arithmetic.py), so the one function serves as the Tensor rule and the array rule
# (Note [Array backward] in autograd/engine.py); test_array_backward.py checks the bits.
def _sqrt_backward(g, out):
    return (g / (out * 2.0),)


@register("tanh")
def tanh(input):
    """tanh x.  d/dx = 1 − out²."""
    out = np.tanh(float_data(input))
    return make_result(
        out, (input,), _tanh_backward, "TanhBackward", save_output=True, array_backward=_tanh_array
    )


def _tanh_backward(g, out):
    return (tanh_backward(g, out),)


def _tanh_array(g, out):
    return (tanh_backward_array(g, out),)


@register("sigmoid")
def sigmoid(input):
    """1 / (1 + e^−x), computed without overflow.  d/dx = out·(1 − out)."""
    out = sigmoid_array(float_data(input))
    return make_result(
        out,
        (input,),
        _sigmoid_backward,
        "SigmoidBackward",
        save_output=True,
        array_backward=_sigmoid_array,
    )


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def sigmoid_array(x):
    """The logistic function on an array, in x's dtype, accurate in relative terms for
    every x and never overflowing: with e = exp(−|x|), σ(|x|) = 1/(1+e), σ(−|x|) = e/(1+e).

    float32/float64 use SciPy's ``expit`` (one ufunc, the same branches; a twentieth of
    the time of the NumPy composition below on small arrays, and equal to PyTorch's
    result to within 3e-7 relative, underflow included)."""
    if x.dtype is _F32 or x.dtype is _F64:
        return _expit(x)
    e = np.absolute(x, out=np.empty_like(x))  # out=: an array even for 0-d x
    np.negative(e, out=e)
    np.exp(e, out=e)  # e = exp(-|x|) in (0, 1]
    pos = np.add(e, 1, out=np.empty_like(e))
    np.reciprocal(pos, out=pos)  # σ(|x|)
    np.multiply(e, pos, out=e)  # σ(−|x|)
    return np.where(x >= 0, pos, e)


def _sigmoid_backward(g, out):
    return (sigmoid_backward(g, out),)


def _sigmoid_array(g, out):
    return (sigmoid_backward_array(g, out),)


@register("relu")
def relu(input):
    """max(x, 0).  d/dx = 1 where x > 0, else 0 (relu'(0) = 0, as PyTorch)."""
    data = input._data
    out = np.maximum(data, _zeros_for_maximum(data))
    return make_result(
        out, (input,), _relu_backward, "ReluBackward", save_output=True, array_backward=_relu_array
    )


# Note [relu against a zeros array]
# NumPy's float maximum runs its SIMD loop only when both operands are arrays of the
# same layout: against the scalar 0 it takes a loop three times slower (7.5 against
# 2.5 us for float32[64, 256], the MLP's activation). The result is the same bit for bit
# (NaN propagates, -0.0 gives +0.0 either way; tests/test_step_overhead.py), so relu
# compares with a read-only zeros array of the input's shape AND strides (a conv's
# channels-last result keeps its layout, which the pooling after it is tiled for), kept
# for the few layouts a model uses (up to 2^16 elements; beyond, a fresh calloc'd one
# costs less than it saves). An input whose layout zeros_like can't copy (a strided
# slice) keeps the scalar.
_ZEROS: dict = {}
_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _zeros_for_maximum(data):
    if not isinstance(data, np.ndarray) or data.size < 256 or data.dtype not in _FLOATS:
        return 0  # small, integer or CuPy arrays: the scalar (weak: keeps the dtype)
    key = (data.shape, data.strides, data.dtype)
    zeros = _ZEROS.get(key)
    if zeros is None:
        # Of a plain view: zeros_like of the graph cache's traced array would be a traced
        # op of the running recording, and this array outlives it.
        zeros = np.zeros_like(np.ndarray.view(data, np.ndarray))
        if zeros.strides != data.strides:
            zeros = 0
        elif data.size > 1 << 16:
            return zeros
        else:
            zeros.flags.writeable = False
        if len(_ZEROS) >= 16:
            _ZEROS.clear()
        _ZEROS[key] = zeros
    return zeros


def _relu_array(g, out):  # Note [Array backward] in autograd/engine.py
    # out != 0 rather than out > 0: a NaN input passes its gradient, as in PyTorch (out is
    # max(x, 0): never negative, so this is NOT (out <= 0) in one array op instead of two).
    # A float product with the boolean mask: np.where(mask, g, 0) and copyto(where=) cost
    # 3-10x more here, a float 0/1 mask (an extra cast pass) about the same.
    return (np.multiply(g, out != 0),)


def _relu_backward(g, out):
    if not STATE.enabled:  # Note [First-order fast paths] in arithmetic.py
        return (Tensor._wrap(_relu_array(g._data, out._data)[0]),)
    return (g * (out._data != 0),)


_ONLY_CONDITION = object()  # where(condition): input and other not given


@register("where", method=False)
def where(condition, input=_ONLY_CONDITION, other=_ONLY_CONDITION):
    """``input`` where ``condition`` holds, else ``other``; all three broadcast.

    d/dinput = g where condition, 0 elsewhere; d/dother the complement. ``where(condition)``
    alone is ``nonzero(condition, as_tuple=True)``, as in PyTorch.
    """
    if input is _ONLY_CONDITION or other is _ONLY_CONDITION:
        if input is not other:
            raise TypeError("where() takes a condition alone or a condition, input and other")
        data = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
        return tuple(Tensor._wrap(c.astype(np.int64)) for c in np.nonzero(np.atleast_1d(data)))
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        cond = _bool_condition(cond)
    ta, da = as_tensor_or_scalar(input, "where")
    tb, db = as_tensor_or_scalar(other, "where")
    try:
        out = np.where(cond, da, db)
    except ValueError:
        raise broadcast_error("where", cond.shape, np.shape(da), np.shape(db)) from None
    # Python scalars are weak (NEP 50), as in PyTorch; where(c, 8.5, -3.9) is float32.
    dtype = _dtypes.fix_float_result(np.empty(0, np.result_type(da, db)), *map(_dtype_of, (da, db)))
    out = out.astype(dtype.dtype, copy=False)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg

    def backward(g):
        zero = np.zeros((), g._data.dtype)
        ga = reduce_grad(where(cond, g, zero), ta) if na else None
        gb = reduce_grad(where(cond, zero, g), tb) if nb else None
        return ga, gb

    def array_backward(g):  # Note [Array backward] in autograd/engine.py: where's kernel
        zero = np.zeros((), g.dtype)
        ga = reduce_grad_array(np.where(cond, g, zero), ta) if na else None
        gb = reduce_grad_array(np.where(cond, zero, g), tb) if nb else None
        return ga, gb

    return keeps_arrays(
        make_result(out, (ta, tb), backward, "WhereBackward", array_backward=array_backward)
    )


def _bool_condition(cond):
    """torch's rule for a condition that is not bool: uint8 is taken with a deprecation
    warning, any other dtype is an error (tapegrad used to cast it)."""
    if cond.dtype == np.uint8:
        _warn.warn(
            "where received a uint8 condition tensor. This behavior is deprecated and will be "
            "removed in a future version of PyTorch. Use a boolean condition instead.",
            UserWarning,
        )
        return cond.astype(bool)
    raise RuntimeError(
        "where expected condition to be a boolean tensor, but got a tensor with dtype "
        f"{_dtype_errors.scalar(cond.dtype)}"
    )


def _where_method(self, condition, other):
    return where(condition, self, other)


Tensor.where = _where_method


# -- more elementwise functions (issue 3) ------------------------------------------------


@register("abs", operators=("__abs__",))
def abs(input):
    """|x|.  d/dx = sign(x), which is 0 at x = 0 (PyTorch's subgradient)."""
    out = np.abs(input._data)

    def backward(g):
        if STATE.enabled:  # create_graph: sign(x) the op (derivative 0), so the gradient is
            return (g * sign(input),)  # a function of x, as torch's (grad of it: zeros)
        return (g * const(_sign(input._data)),)

    return make_result(out, (input,), backward, "AbsBackward", saved=(input,))


Tensor.absolute = abs


def _zero_backward(g):
    return (Tensor._wrap(np.zeros(g._data.shape, g._data.dtype)),)


@register("sign")
def sign(input):
    """-1, 0 or 1 by the sign of x.  d/dx = 0."""
    return make_result(_sign(input._data), (input,), _zero_backward, "SignBackward")


def _dtype_of(d):
    return getattr(d, "dtype", None)


def _sign(x):
    """np.sign with sign(NaN) = 0, as PyTorch."""
    s = np.asanyarray(np.sign(x))
    return np.nan_to_num(s, nan=0.0, copy=False) if s.dtype.kind == "f" else s


@register("log1p")
def log1p(input):
    """log(1 + x), accurate for small x.  d/dx = 1/(1 + x)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log1p(float_data(input))

    def backward(g):
        return (g / (input + 1.0),)

    return make_result(out, (input,), backward, "Log1pBackward", saved=(input,))


@register("expm1")
def expm1(input):
    """e^x − 1, accurate for small x.  d/dx = out + 1."""
    out = _fpquiet.call(np.expm1, float_data(input))
    return make_result(out, (input,), _expm1_backward, "Expm1Backward", save_output=True)


def _expm1_backward(g, out):
    return (g * (out + 1.0),)


@register("rsqrt")
def rsqrt(input):
    """1/√x.  d/dx = −out³/2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 / np.sqrt(float_data(input))
    return make_result(
        out,
        (input,),
        _rsqrt_backward,
        "RsqrtBackward",
        save_output=True,
        array_backward=_rsqrt_backward,  # Note [Rules in operators]
    )


def _rsqrt_backward(g, out):
    return (g * (out * out * out) * -0.5,)


@register("sin")
def sin(input):
    """sin x.  d/dx = cos x."""
    out = _fpquiet.call(np.sin, float_data(input))

    def backward(g):
        return (g * input.cos(),)

    return make_result(out, (input,), backward, "SinBackward", saved=(input,))


@register("cos")
def cos(input):
    """cos x.  d/dx = −sin x."""
    out = _fpquiet.call(np.cos, float_data(input))

    def backward(g):
        return (g * -input.sin(),)

    return make_result(out, (input,), backward, "CosBackward", saved=(input,))


@register("tan")
def tan(input):
    """tan x.  d/dx = 1 + out²."""
    out = _fpquiet.call(np.tan, float_data(input))
    return make_result(out, (input,), _tan_backward, "TanBackward", save_output=True)


def _tan_backward(g, out):
    return (g * (out * out + 1.0),)


def _step(name, fn, node):
    """A piecewise-constant function: integer tensors pass through (copied), d/dx = 0."""

    def step(input):
        data = input._data
        out = data.copy() if data.dtype.kind in "iub" else fn(data)
        return make_result(out, (input,), _zero_backward, node)

    step.__name__ = name
    step.__doc__ = f"Elementwise ``{name}``; integer tensors are returned unchanged. d/dx = 0."
    return step


floor = register("floor")(_step("floor", np.floor, "FloorBackward"))
ceil = register("ceil")(_step("ceil", np.ceil, "CeilBackward"))


@register("round")
def round(input, *, decimals=0):
    """Round half to even (as PyTorch), to ``decimals`` decimal places.  d/dx = 0."""
    data = input._data
    if data.dtype.kind in "iub" and decimals >= 0:
        out = data.copy()
    else:
        out = np.round(data, decimals)
    return make_result(out, (input,), _zero_backward, "RoundBackward")
