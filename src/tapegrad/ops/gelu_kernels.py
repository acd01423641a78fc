"""Exact GELU's array kernels and its fused gradient rule ``_gelu_backward``.

GELU(x) = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2. SciPy's erf is scalar Cephes code, about
forty times slower than ``np.exp`` per float32 element: it made up a quarter of a small
GPT's training step. For float32, :func:`normal_cdf` evaluates erf with the rational
minimax approximation that Eigen and XLA use for float32 (odd degree-13 numerator over
even degree-8 denominator on [−4, 4], ±1 beyond): within 4.2e-7 of the exact erf (7 ulp
near ±1, 4 ulp relative near 0), the size of float32 rounding in 1 + erf, in NumPy calls
only (no Python loop, recordable by tapegrad.jit). Other dtypes use SciPy's erf.

GELU's own forward (:func:`normal_cdf_and_slope`) takes another float32 route, the one
PyTorch's vectorised CPU erf takes (Abramowitz & Stegun 7.1.26: erfc(z) = t·P(t)·e^(−z²),
t = 1/(1 + p·z), P of degree 4, within 1.5e-7 of the exact erf): some twenty passes over
the array instead of twenty-seven, and the e^(−x²/2) it computes is the one the gradient
needs (x·φ(x) = x·e^(−x²/2)/√(2π)): no second exponential for the gradient.

Note [GELU's slope in the forward]
The backward needs Φ(x) + x·φ(x) (the slope), not Φ(x) itself. When a gradient will be
taken, the forward computes the slope right after Φ, while x, Φ and e^(−x²/2) are still in
cache (three passes: x·e^(−x²/2), times 1/√(2π), plus Φ), keeps it instead of Φ and
e^(−x²/2) (one array instead of two), and the backward is one multiply, grad·slope. The
backward used to run the same three passes and the multiply on arrays the forward had
left long before (in a GPT step, every GEMM of the layers above in between): 290-390 us
there against ~25 us per pass here, per 16 x 64 x 256 activation on one core. The
operations and their order are the backward's own ((x·e)·(1/√(2π)) + Φ, then times
grad, and a product does not depend on the order of its two operands), so the
gradient is the same bits as before (tests/nn/test_gelu_float32.py).

``_gelu_backward(grad, input)`` = grad·(Φ(x) + x·φ(x)), φ the standard normal density,
is one differentiable op (as PyTorch's ``aten.gelu_backward``), with its own derivative
in tapegrad ops, so ``create_graph=True`` still yields every order:

    d/dgrad = Φ(x) + x·φ(x)  (the op itself, applied to the incoming gradient)
    d/dx    = grad·φ(x)·(2 − x²)
"""

from __future__ import annotations

import math

import numpy as np

from .._parallel import MIN_ELEMENTS, map_rows
from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from ._registry import register
from ._util import reduce_grad

__all__ = ["normal_cdf", "normal_cdf_and_slope", "gelu_backward"]

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

_F32 = np.float32
_SPLIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Eigen's generic_fast_erf_float: erf(z) ≈ z·P(z²)/Q(z²) on [−4, 4]
_ALPHA = [
    _F32(c)
    for c in (
        -2.72614225801306e-10,  # z^13
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,  # z^1
    )
]
_BETA = [
    _F32(c)
    for c in (
        -1.45660718464996e-05,  # z^8
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,  # z^0
    )
]


# erf/2: the numerator's coefficients halved. Halving is exact in float32 away from
# the subnormals, so z·P(z²)/2 / Q(z²) rounds exactly as z·P(z²)/Q(z²) halved, and
# clipping to ±1/2 equals clipping to ±1 then halving: Φ = erf/2 + 1/2 in one pass
# fewer, bitwise the same (a subnormal erf/2 vanishes in the + 1/2 either way).
_HALF_ALPHA = [a * _F32(0.5) for a in _ALPHA]


# Abramowitz & Stegun 7.1.26 for erfc(|z|)/2 at z = x/√2: t = 1/(1 + p·|x|/√2), then
# erfc(|z|)/2 = t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))/2 · e^(−x²/2). Evaluated in
# u = α·t with α⁵ = a5/2, so that the polynomial is monic in u (one multiply fewer):
# t·P(t)/2 = u·(c1 + u·(c2 + u·(c3 + u·(c4 + u)))), c_i = (a_i/2)/αⁱ; and u itself is
# (α/P)/(1/P + |x|), P = p/√2 (one pass fewer than 1/(1 + P·|x|), then a scaling).
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # a1 .. a5
_AS_ALPHA = (_AS_A[4] / 2.0) ** 0.2
_AS_P = 0.3275911 * _INV_SQRT_2
_AS_U_NUM = _F32(_AS_ALPHA / _AS_P)
_AS_U_DEN = _F32(1.0 / _AS_P)
_AS_C = [_F32(a / 2.0 / _AS_ALPHA ** (i + 1)) for i, a in enumerate(_AS_A[:4])][::-1]  # c4..c1
_SIGN_BIT = np.int32(-(1 << 31))  # 0x80000000 as an int32


def _cdf_gauss_f32(x, c=None, e=None):
    """``(Φ(x), e^(−x²/2))`` of a float32 array, written into ``c`` and ``e`` when given.

    Φ(±inf) is 1 and 0, NaN stays NaN (no clipping: u → 0 and e^(−x²/2) → 0 in the tails).
    Nineteen NumPy passes: u (3), the polynomial (8), e^(−x²/2) (3), then
    Φ = 1/2 + sign(x)·(1/2 − erfc(|z|)/2) (5), the sign copied as a bit (two integer passes:
    ``np.copysign`` costs six times a multiply).
    """
    u = np.abs(x)
    u += _AS_U_DEN
    np.divide(_AS_U_NUM, u, out=u)
    h = np.add(u, _AS_C[0], out=c)
    h *= u
    for k in _AS_C[1:]:
        h += k
        h *= u
    e = np.multiply(x, x, out=e)
    e *= _F32(-0.5)
    np.exp(e, out=e)
    h *= e  # erfc(|x|/√2)/2, in [0, 1/2]
    np.subtract(_F32(0.5), h, out=h)  # erf(|x|/√2)/2 (≥ 0 but for a rounding near x = 0)
    bits = u.view(np.int32)
    np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=bits)  # x's sign bit
    hb = h.view(np.int32)
    np.bitwise_or(hb, bits, out=hb)  # erf(x/√2)/2
    h += _F32(0.5)
    return h, e


def _erf_f32(z, alpha=_ALPHA, bound=1.0):
    """erf of a float32 array (a new array; ``z`` is left alone); erf/2 with
    ``alpha=_HALF_ALPHA, bound=0.5``."""
    z = np.clip(z, _F32(-4.0), _F32(4.0))
    z2 = z * z
    p = z2 * alpha[0]
    p += alpha[1]
    for a in alpha[2:]:
        p *= z2
        p += a
    p *= z
    q = z2 * _BETA[0]
    q += _BETA[1]
    for b in _BETA[2:]:
        q *= z2
        q += b
    p /= q
    return np.clip(p, _F32(-bound), _F32(bound), out=p)


def normal_cdf(x):
    """Φ(x) = (1 + erf(x/√2))/2 on an array, in x's dtype."""
    if x.ndim == 0:  # NumPy gives scalars for 0-d operands; the in-place steps need arrays
        return normal_cdf(x.reshape(1)).reshape(())
    if _parallel_ok(x):  # Note [Intra-op parallelism]
        c = np.empty_like(x)
        map_rows(_cdf_kernel, (c,), (x,))
        return c
    return _normal_cdf(x)


def normal_cdf_and_slope(x, slope=True):
    """``(Φ(x), s)`` for GELU's forward: ``s`` = Φ(x) + x·φ(x), GELU's derivative (Note
    [GELU's slope in the forward]), or None when ``slope`` is false."""
    if x.dtype != np.float32 or x.ndim == 0:
        c = normal_cdf(x)
        if not slope:
            return c, None
        s = _normal_pdf_times_x(x)
        s += c
        return c, s
    c, s = np.empty_like(x), np.empty_like(x)
    kernel = _cdf_slope_kernel if slope else _cdf_gauss_kernel
    if _parallel_ok(x):  # Note [Intra-op parallelism]
        map_rows(kernel, (c, s), (x,))
    else:
        kernel((c, s), (x,))
    return c, (s if slope else None)


def _cdf_gauss_kernel(outs, ins):  # the rows of Φ(x) and e^(−x²/2), float32
    (c, e), (x,) = outs, ins
    _cdf_gauss_f32(x, c, e)


def _cdf_slope_kernel(outs, ins):  # the rows of Φ(x) and Φ(x) + x·φ(x), float32
    (c, s), (x,) = outs, ins
    _cdf_gauss_f32(x, c, s)  # s: e^(−x²/2), then Φ(x) + x·e^(−x²/2)/√(2π)
    np.multiply(x, s, out=s)
    s *= _F32(_INV_SQRT_2PI)
    s += c


def _parallel_ok(*arrays):
    """Large C-contiguous float32/float64 arrays of one shape: worth splitting over threads."""
    x = arrays[0]
    return (
        x.size >= 2 * MIN_ELEMENTS
        and x.dtype in _SPLIT_DTYPES
        and all(a.shape == x.shape and a.dtype == x.dtype for a in arrays)
        and all(a.flags.c_contiguous for a in arrays)
    )


def _cdf_kernel(outs, ins):  # the rows of Φ(x)
    (c,), (x,) = outs, ins
    if x.dtype == np.float32:
        np.add(_erf_f32(x * _F32(_INV_SQRT_2), _HALF_ALPHA, 0.5), _F32(0.5), out=c)
    else:
        c[...] = _normal_cdf(x)


def _gelu_grad_kernel(outs, ins):  # the rows of GELU's gradient
    (out,), (grad, x, cdf) = outs, ins
    t = _normal_pdf_times_x(x)
    t += cdf
    np.multiply(grad, t, out=out)


def _times_kernel(outs, ins):  # the rows of grad·slope
    (out,), (grad, slope) = outs, ins
    np.multiply(grad, slope, out=out)


def _normal_cdf(x):
    if x.dtype == np.float32:
        c = _erf_f32(x * _F32(_INV_SQRT_2), _HALF_ALPHA, 0.5)
        c += _F32(0.5)
        return c
    from .activation import _erf_array  # noqa: PLC0415 - SciPy's erf, loaded lazily there

    c = _erf_array(x * _INV_SQRT_2)
    c += 1.0
    c *= 0.5
    return c.astype(x.dtype, copy=False)


def _normal_pdf_times_x(x):
    """x·φ(x) on an array, in x's dtype."""
    if x.ndim == 0:
        return _normal_pdf_times_x(x.reshape(1)).reshape(())
    t = x * x
    t *= x.dtype.type(-0.5)
    np.exp(t, out=t)
    t *= x.dtype.type(_INV_SQRT_2PI)
    t *= x
    return t


@register("_gelu_backward", method=False)
def gelu_backward(grad, input, _slope=None):
    """``grad · (Φ(x) + x·φ(x))``: the gradient of exact GELU at ``input``.

    ``_slope``: Φ(input) + input·φ(input) as an array when the caller (GELU's forward) has
    it already (Note [GELU's slope in the forward]).
    """
    x = input._data
    gd = grad._data
    if _slope is not None:
        if _parallel_ok(x, gd, _slope):  # Note [Intra-op parallelism]
            out = np.empty_like(x)
            map_rows(_times_kernel, (out,), (gd, _slope))
        else:
            out = np.multiply(gd, _slope)
    elif _parallel_ok(x, gd):  # one fused kernel, split
        cdf = normal_cdf(x)
        out = np.empty_like(x)
        map_rows(_gelu_grad_kernel, (out,), (gd, x, cdf))
    else:
        t = _normal_pdf_times_x(x)
        t += normal_cdf(x)
        in_place = t.shape == gd.shape and t.dtype == np.result_type(gd, t)
        out = np.multiply(gd, t, out=t if in_place else None)
    if not (STATE.enabled and (grad._rg or input._rg)):
        return Tensor._wrap(out)

    def backward(gg):
        gx = None
        if input._rg:
            x2 = input * input
            pdf = (x2 * -0.5).exp() * _INV_SQRT_2PI
            gx = reduce_grad(gg * grad * pdf * (2.0 - x2), input)
        return (reduce_grad(gelu_backward(gg, input), grad) if grad._rg else None), gx

    return make_result(out, (grad, input), backward, "GeluBackwardBackward", saved=(grad, input))
