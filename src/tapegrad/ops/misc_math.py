"""Elementwise ops with arguments or control flow a table row can't hold: logit(eps),
polygamma(n), mvlgamma(p), nan_to_num, lerp, float_power, ldexp, clamp_min/max, positive,
and the closeness tests isclose/allclose/equal.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
import scipy.special as sc

from .. import _dtypes
from ..autograd.graph import keeps_arrays, make_result
from ..tensor import Tensor
from . import _table
from ._registry import add_alias, register
from ._util import (
    as_tensor,
    as_tensor_or_scalar,
    broadcast_error,
    float_data,
    kernel_result,
    reduce_grad,
)

FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])

__all__ = [
    "logit",
    "polygamma",
    "mvlgamma",
    "nan_to_num",
    "lerp",
    "float_power",
    "ldexp",
    "clamp_min",
    "clamp_max",
    "positive",
    "isclose",
    "allclose",
    "equal",
]


def _mask(array, dtype):
    return Tensor._wrap(np.asarray(array, dtype))


@register("logit")
def logit(input, eps=None):
    """log(x / (1 − x)); with ``eps``, x is first clamped to [eps, 1 − eps].

    d/dx = 1 / (x(1 − x)), and 0 where ``eps`` clamps x (NaN outside [0, 1] without eps).
    """
    x = as_tensor(input, "logit")
    data = float_data(x)
    if eps is not None:
        data = np.clip(data, eps, 1.0 - eps)
    with np.errstate(all="ignore"):
        out = np.log(data / (1.0 - data))  # data's float dtype: 1.0 is a weak scalar

    def backward(g):
        grad = g / (x * (1.0 - x))
        if eps is None:
            return (grad,)
        inside = (x._data >= eps) & (x._data <= 1.0 - eps)
        return (grad.where(_mask(inside, bool), 0.0),)

    return make_result(out, (x,), backward, "LogitBackward", saved=(x,))


@register("polygamma", method=False)
def polygamma(n, input):
    """The n-th derivative of the digamma function.  d/dx = polygamma(n + 1, x)."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n!r}")
    x = as_tensor(input, "polygamma")
    data = float_data(x)
    with np.errstate(all="ignore"):
        out = kernel_result(sc.polygamma(int(n), data), data)

    def backward(g):
        return (g * polygamma(n + 1, x),)

    return make_result(out, (x,), backward, "PolygammaBackward", saved=(x,))


def _polygamma_method(self, n):
    return polygamma(n, self)


Tensor.polygamma = _polygamma_method


@register("mvlgamma")
def mvlgamma(input, p):
    """Multivariate log-gamma of dimension ``p``: Σᵢ lgamma(x − i/2) + p(p−1)/4·log π.

    Composed of lgamma and a sum, so its derivative (Σ digamma) needs no rule of its own.
    As torch 2.13 does, an element at or below (p − 1)/2 is not refused: lgamma is
    log|Γ| there (inf at the poles).
    """
    x = as_tensor(input, "mvlgamma")
    if p < 1:
        raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1, got {p}")
    if x._data.dtype.kind in "iub":
        x = Tensor._wrap(float_data(x))
    shifts = Tensor._wrap(np.arange(p, dtype=x._data.dtype) * -0.5)
    return (x.unsqueeze(-1) + shifts).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


@register("nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and −inf replaced by ``nan``, ``posinf`` and ``neginf`` (the dtype's
    largest and lowest finite values by default).  d/dx = 1 where x is finite, else 0."""
    x = as_tensor(input, "nan_to_num")
    data = x._data
    if data.dtype.kind in "iub":
        return Tensor._wrap(data.copy())
    if data.dtype.kind == "V":  # bfloat16: NumPy sees no float (Note [bfloat16 opmath])
        import ml_dtypes  # noqa: PLC0415 - loaded already: a bfloat16 tensor exists

        big = float(ml_dtypes.finfo(data.dtype).max)
        posinf = big if posinf is None else posinf
        neginf = -big if neginf is None else neginf
        data = _dtypes.opmath(data)
    out = kernel_result(np.nan_to_num(data, nan=nan, posinf=posinf, neginf=neginf), data)

    def backward(g):
        return (g * _mask(np.isfinite(x._data), g._data.dtype),)

    return make_result(out, (x,), backward, "NanToNumBackward", saved=(x,))


@register("lerp")
def lerp(input, end, weight):
    """``input + weight·(end − input)``; ``weight`` is a number or a broadcast tensor.

    d/dinput = 1 − w, d/dend = w, d/dweight = end − input.
    """
    ta = as_tensor(input, "lerp")
    tb = as_tensor(end, "lerp")
    tw, dw = as_tensor_or_scalar(weight, "lerp")
    a, b = ta._data, tb._data
    if a.dtype != b.dtype or (tw is not None and dw.dtype != a.dtype):
        raise RuntimeError(
            f"lerp: expected dtype {a.dtype} for `end` and `weight`, got "
            f"{b.dtype} and {getattr(dw, 'dtype', type(dw).__name__)}"
        )
    try:
        # PyTorch's two-sided form: exact at both ends.
        out = np.where(np.abs(dw) < 0.5, a + dw * (b - a), b - (b - a) * (1 - np.asarray(dw)))
    except ValueError:
        raise broadcast_error("lerp", a.shape, b.shape, np.shape(dw)) from None
    out = np.asarray(out, a.dtype)
    w = tw if tw is not None else dw

    def backward(g):
        ga = reduce_grad(g * (1.0 - w), ta) if ta._rg else None
        gb = reduce_grad(g * w, tb) if tb._rg else None
        gw = reduce_grad(g * (tb - ta), tw) if tw is not None and tw._rg else None
        return ga, gb, gw

    # A number weight: the rule reads no tensor, so nothing is saved (PyTorch's lerp_Scalar).
    saved = (ta, tb, tw) if tw is not None else ()
    return make_result(out, (ta, tb, tw), backward, "LerpBackward", saved=saved)


@register("float_power")
def float_power(input, exponent):
    """``input ** exponent`` computed in float64, or complex128 when either operand is
    complex (the result's dtype, as in PyTorch).

    Composed of a cast and ``pow``: the gradient is pow's, cast back to each input's dtype.
    """
    dtype = np.complex128 if _float_power_complex(input, exponent) else np.float64
    if not isinstance(input, Tensor):
        input = Tensor._wrap(np.asarray(input, dtype))
    base = input if input._data.dtype == dtype else input._cast(dtype)
    if isinstance(exponent, Tensor):
        exponent = exponent if exponent._data.dtype == dtype else exponent._cast(dtype)
    else:
        exponent = complex(exponent) if dtype is np.complex128 else float(exponent)
    return base.pow(exponent)


def _float_power_complex(*operands):
    return any(
        isinstance(x, complex) or (isinstance(x, Tensor) and x._data.dtype.kind == "c")
        for x in operands
    )


@register("ldexp")
def ldexp(input, other):
    """``input · 2**other`` (float result).  Composed of ``mul`` and ``exp2``."""
    x = as_tensor(input, "ldexp")
    e = as_tensor(other, "ldexp")
    if x._data.dtype.kind in "iub":
        x = Tensor._wrap(float_data(x))
    return x * e.exp2()


@register("clamp_min")
def clamp_min(input, min):
    """``clamp(input, min=min)``."""
    return input.clamp(min=min)


@register("clamp_max")
def clamp_max(input, max):
    """``clamp(input, max=max)``."""
    return input.clamp(max=max)


@register("positive")
def positive(input):
    """``input`` itself (as PyTorch: ``positive(x) is x``).

    Raises:
        TypeError: for bool tensors.
    """
    if input._data.dtype == np.bool_:
        raise TypeError(
            "The `+` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return input


@register("isclose", differentiable=False)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input − other| <= atol + rtol·|other|, elementwise (a bool tensor).

    Raises:
        RuntimeError: if the dtypes differ or a tolerance is negative.
    """
    a = as_tensor(input, "isclose")
    b = as_tensor(other, "isclose")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"isclose: {a._data.dtype} did not match {b._data.dtype} (input and other must "
            "have the same dtype)"
        )
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be non-negative, got {rtol}, {atol}")
    try:
        out = np.isclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except ValueError:
        raise broadcast_error("isclose", a.shape, b.shape) from None
    return Tensor._wrap(np.asarray(out))


@register("allclose", differentiable=False)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``isclose`` holds everywhere (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@register("equal", differentiable=False)
def equal(input, other):
    """True if both tensors have the same shape and elements (a Python bool).

    The dtypes may differ (``equal(ones(2), ones(2, dtype=float64))`` is True).

    Raises:
        TypeError: if either argument is not a Tensor (as PyTorch).
    """
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"equal(): argument '{name}' must be Tensor, not {type(t).__name__}")
    a, b = input._data, other._data
    return a.shape == b.shape and bool(np.array_equal(a, b))


@register("rsub")
def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``sub`` with the operands swapped)."""
    if isinstance(other, Tensor):
        return other.sub(input, alpha=alpha)
    return input * -alpha + other


@register("frexp")
def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa · 2**exponent``, |mantissa| in
    [0.5, 1); exponent is int32.  d(mantissa)/dx = 2**−exponent.

    Raises:
        RuntimeError: for integer tensors (as PyTorch).
    """
    x = as_tensor(input, "frexp")
    data = x._data
    if data.dtype.kind == "V":  # bfloat16: Note [bfloat16 opmath]
        data = _dtypes.opmath(data)
    elif data.dtype.kind != "f":
        raise RuntimeError(
            f"frexp: only supports floating-point dtypes, got a tensor of dtype {x._data.dtype}"
        )
    mantissa, exponent = np.frexp(data)
    scale = np.ldexp(np.ones_like(data), -exponent)

    def backward(g):
        return (g * _mask(scale, g._data.dtype),)

    out = keeps_arrays(make_result(mantissa, (x,), backward, "FrexpBackward"))  # saves exponent
    return FrexpResult(out, Tensor._wrap(exponent.astype(np.int32)))


def _identity(name, doc):
    def op(input):
        return input

    op.__name__ = name
    op.__doc__ = doc
    return register(name)(op)


# real, conj, conj_physical, resolve_conj: ops/complex_ops.py
resolve_neg = _identity("resolve_neg", "Materializes a lazy negation: a real tensor itself.")


@register("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value · tensor1 · tensor2``, broadcasting (composed of mul and add)."""
    return input + (tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2)


@register("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value · tensor1 / tensor2``, broadcasting (composed of div and add).

    Raises:
        RuntimeError: when both tensors are integer (as PyTorch: use true division).
    """
    t1, t2 = as_tensor(tensor1, "addcdiv"), as_tensor(tensor2, "addcdiv")
    if t1._data.dtype.kind in "iub" and t2._data.dtype.kind in "iub":
        raise RuntimeError(
            "addcdiv: integer division of tensors using addcdiv is no longer supported; "
            "divide tensor1 by tensor2 with a true division instead"
        )
    return input + (t1 / t2 if value == 1 else value * t1 / t2)


Tensor.__rdiv__ = Tensor.__rtruediv__


for _name, _fn in (
    ("addcmul", addcmul),
    ("addcdiv", addcdiv),
    ("nan_to_num", nan_to_num),
    ("lerp", lerp),
    ("ldexp", ldexp),
    ("clamp_min", clamp_min),
    ("clamp_max", clamp_max),
    ("logit", logit),
    ("mvlgamma", mvlgamma),
):
    register(f"{_name}_", inplace=True)(_table.make_inplace(_name, _fn))


_float_power_inplace = _table.make_inplace("float_power", float_power)


@register("float_power_", inplace=True)
def float_power_(self, exponent):
    """In-place ``float_power``: self must be float64 (the result's dtype), as in PyTorch."""
    want = np.complex128 if _float_power_complex(self, exponent) else np.float64
    if self._data.dtype != want:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {self._data.dtype} but the operation's "
            f"result requires dtype {np.dtype(want)}"
        )
    return _float_power_inplace(self, exponent)


def _polygamma_(self, n):
    return _table.make_inplace("polygamma", lambda x: polygamma(n, x))(self)


Tensor.polygamma_ = _polygamma_

# PyTorch's other names for ops defined elsewhere.
for _alias, _name in (("multiply", "mul"), ("subtract", "sub")):
    add_alias(_alias, _name)

_ = _dtypes
