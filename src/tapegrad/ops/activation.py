"""Smooth activation functions: erf, gelu, silu, softplus.

Each backward is written in tapegrad ops on the saved input, so derivatives of
any order follow. Integer inputs compute in the default float dtype.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ._registry import register
from ._util import float_data, kernel_result
from .elementwise import sigmoid_array, where
from .gelu_kernels import gelu_backward, normal_cdf_and_slope

__all__ = ["erf", "gelu", "silu", "softplus"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715

_erf_impl = None


def _erf_array(x):
    """erf on an array, in x's dtype.

    NumPy has no erf. SciPy's (vectorised C) is used when installed; otherwise
    ``math.erf`` applied element by element: exact, but slow on large arrays.
    SciPy stays optional so that NumPy remains tapegrad's only hard dependency.
    """
    global _erf_impl
    if _erf_impl is None:
        try:
            from scipy.special import erf as impl  # noqa: PLC0415 - optional dependency
        except ImportError:
            impl = np.vectorize(math.erf, otypes=[np.float64])
        _erf_impl = impl
    return np.asanyarray(_erf_impl(x), dtype=x.dtype)


@register("erf")
def erf(input):
    """The error function.  d/dx = 2/√π · e^(−x²)."""
    out = _erf_array(float_data(input))

    def backward(g):
        return (g * (-(input * input)).exp() * _TWO_OVER_SQRT_PI,)

    return make_result(out, (input,), backward, "ErfBackward", saved=(input,))


@register("gelu")
def gelu(input, approximate="none"):
    """x·Φ(x), Φ the standard normal CDF; ``approximate='tanh'`` uses the tanh form.

    d/dx = Φ(x) + x·φ(x) (exact), or the derivative of 0.5·x·(1 + tanh(k(x + 0.044715x³)))
    with k = √(2/π) (tanh form).
    """
    x = float_data(input)
    if approximate == "none":
        # One fused kernel (ops/gelu_kernels.py): Φ(x), and when a gradient will be taken
        # the derivative Φ(x) + x·φ(x), kept for the backward (Note [GELU's slope in the
        # forward]).
        cdf, slope = normal_cdf_and_slope(x, STATE.enabled and input._rg)
        out = x * cdf
        del cdf
        return make_result(
            out,
            (input,),
            lambda g: (gelu_backward(g, input, slope),),
            "GeluBackward",
            saved=(input,),
        )
    if approximate == "tanh":
        out = x * 0.5 * (1.0 + np.tanh(_GELU_K * (x + _GELU_C * x * x * x)))
    else:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    out = out.astype(x.dtype, copy=False)
    return make_result(
        out, (input,), lambda g: _gelu_tanh_backward(g, input), "GeluBackward", saved=(input,)
    )


def _gelu_tanh_backward(g, x):
    x2 = x * x
    t = ((x + x2 * x * _GELU_C) * _GELU_K).tanh()
    dinner = (x2 * (3.0 * _GELU_C) + 1.0) * _GELU_K
    return (g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * dinner),)


@register("silu")
def silu(input):
    """x·σ(x) (also called swish).  d/dx = σ(x)·(1 + x·(1 − σ(x)))."""
    x = float_data(input)
    out = x * sigmoid_array(x)

    def backward(g):
        s = input.sigmoid()
        return (g * s * (input * (1.0 - s) + 1.0),)

    return make_result(out, (input,), backward, "SiluBackward", saved=(input,))


@register("softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + e^(βx))/β, and x itself where βx > ``threshold`` (as PyTorch).

    d/dx = σ(βx), and 1 where βx > threshold.
    """
    x = float_data(input)
    bx = x * beta
    linear = bx > threshold
    out = kernel_result(np.where(linear, x, np.logaddexp(0.0, bx) / beta), x)

    def backward(g):
        return (g * where(linear, 1.0, (input * beta).sigmoid()),)

    return make_result(out, (input,), backward, "SoftplusBackward", saved=(input,))
