"""Elementwise functions of one tensor, as a table (Note [Op tables] in ops/_table.py).

One row per op: PyTorch's name, the NumPy/SciPy kernel, the derivative in tapegrad ops
(``g`` the incoming gradient, ``x`` the input, ``o`` the output), the test domain and the
aliases. The hand-written functions of ops/elementwise.py (exp, log, sin, ...) stay there.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from ..tensor import Tensor
from ._dtype_errors import scalar as _scalar_name
from ._table import NOT_IMPLEMENTED, Unary, install, make_unary

__all__ = ["UNARY", "FUNCTIONS"]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _zeros(g, x, o):
    """The gradient of a piecewise-constant function: zeros (not g * 0, which turns inf
    into NaN)."""
    return Tensor._wrap(np.zeros(g._data.shape, g._data.dtype))


def _const(mask, dtype):
    return Tensor._wrap(np.asarray(mask, dtype))


def _sinc_grad(g, x, o):
    # d/dx sin(πx)/(πx) = (cos(πx) − sinc x)/x, and 0 at x = 0.
    zero = x._data == 0
    safe = x.where(_const(~zero, bool), 1.0)
    return g * ((safe * _PI).cos() - o).div(safe).where(_const(~zero, bool), 0.0)


def _sinc(x):
    return np.sinc(x)


def _angle(x):
    if x.dtype.kind == "c":
        return np.angle(x)
    out = np.where(x < 0, np.pi, 0.0).astype(x.dtype)
    return np.where(np.isnan(x), x, out)


def _i1_grad(g, x, o):
    # i1'(x) = i0(x) − i1(x)/x, and 1/2 at x = 0.
    zero = x._data == 0
    safe = x.where(_const(~zero, bool), 1.0)
    return g * (x.i0() - o / safe).where(_const(~zero, bool), 0.5)


def _i1e_grad(g, x, o):
    # i1e'(x) = i0e(x) − i1e(x)·(sign x + 1/x), and 1/2 at x = 0.
    zero = x._data == 0
    safe = x.where(_const(~zero, bool), 1.0)
    return g * (_special("special_i0e")(x) - o * (x.sign() + 1.0 / safe)).where(
        _const(~zero, bool), 0.5
    )


def _square(x):
    return np.square(x.astype(np.int64) if x.dtype == np.bool_ else x)


def _sgn(x):
    return x.copy() if x.dtype == np.bool_ else np.sign(x)


def _frac_check(dtype):
    if dtype.kind == "c":  # float_only refuses the other non-float dtypes
        raise NotImplementedError(
            f"frac: \"frac_cpu\" not implemented for '{_scalar_name(dtype)}' (tensors of dtype "
            f"{dtype})"
        )


def _no_bool(name, complex_error=None):
    """torch's dispatch-stub errors (NotImplementedError) for bool and, with
    ``complex_error``, complex inputs (NumPy's kernel would raise its own TypeError)."""

    def check(dtype):
        if dtype == np.bool_:
            raise NotImplementedError(
                f"{name}: \"{name}_cpu\" not implemented for 'Bool' (bool tensors)"
            )
        if complex_error is not None and dtype.kind == "c":
            raise NotImplementedError(f"{name}: {complex_error} (tensors of dtype {dtype})")

    return check


def _special(name):
    from ._registry import OPS  # noqa: PLC0415 - rows refer to ops registered later

    return OPS[name].fn


UNARY = [
    # -- inverse and hyperbolic trigonometry --
    Unary(
        "asin",
        np.arcsin,
        lambda g, x, o: g * (1.0 - x * x).rsqrt(),
        domain=(-0.9, 0.9),
        aliases=("arcsin",),
    ),
    Unary(
        "acos",
        np.arccos,
        lambda g, x, o: -g * (1.0 - x * x).rsqrt(),
        domain=(-0.9, 0.9),
        aliases=("arccos",),
    ),
    Unary("atan", np.arctan, lambda g, x, o: g / (x * x + 1.0), aliases=("arctan",), arrays=True),
    Unary("sinh", np.sinh, lambda g, x, o: g * x.cosh()),
    Unary("cosh", np.cosh, lambda g, x, o: g * x.sinh()),
    Unary("asinh", np.arcsinh, lambda g, x, o: g * (x * x + 1.0).rsqrt(), aliases=("arcsinh",)),
    Unary(
        "acosh",
        np.arccosh,
        lambda g, x, o: g * ((x - 1.0) * (x + 1.0)).rsqrt(),
        domain=(1.2, 3.0),
        aliases=("arccosh",),
    ),
    Unary(
        "atanh",
        np.arctanh,
        lambda g, x, o: g / (1.0 - x * x),
        domain=(-0.9, 0.9),
        aliases=("arctanh",),
        arrays=True,
    ),
    Unary("deg2rad", np.deg2rad, lambda g, x, o: g * (_PI / 180.0), uses="none", arrays=True),
    Unary("rad2deg", np.rad2deg, lambda g, x, o: g * (180.0 / _PI), uses="none", arrays=True),
    Unary("sinc", _sinc, _sinc_grad, special="sinc", notes="sin(πx)/(πx), 1 at 0.", uses="both"),
    # -- exponentials and logarithms --
    Unary("exp2", np.exp2, lambda g, x, o: g * o * _LN2, special="exp2", uses="out", arrays=True),
    Unary("log2", np.log2, lambda g, x, o: g / (x * _LN2), domain=(0.2, 3.0), arrays=True),
    Unary("log10", np.log10, lambda g, x, o: g / (x * _LN10), domain=(0.2, 3.0), arrays=True),
    Unary(
        "reciprocal",
        np.reciprocal,
        lambda g, x, o: -g * o * o,
        domain=(0.5, 2.0),
        uses="out",
        arrays=True,
    ),
    Unary("square", _square, lambda g, x, o: g * x * 2.0, kind="same", arrays=True),
    # -- error and gamma functions --
    Unary(
        "erfc", sc.erfc, lambda g, x, o: g * (-(x * x)).exp() * -_TWO_OVER_SQRT_PI, special="erfc"
    ),
    Unary(
        "erfinv",
        sc.erfinv,
        lambda g, x, o: g * (o * o).exp() * _SQRT_PI_OVER_2,
        domain=(-0.9, 0.9),
        special="erfinv",
        uses="out",
    ),
    Unary(
        "lgamma",
        sc.gammaln,
        lambda g, x, o: g * x.digamma(),
        domain=(0.2, 3.0),
        special="gammaln",
        notes="log|Γ(x)|.",
    ),
    Unary(
        "digamma",
        sc.psi,
        lambda g, x, o: g * x.polygamma(1),
        domain=(0.2, 3.0),
        special="digamma",
        notes="Also tg.special.psi.",
    ),
    Unary("i0", np.i0, lambda g, x, o: g * _special("special_i1")(x), special="i0"),
    # -- steps, signs and parts (derivative zero where defined) --
    Unary(
        "trunc",
        np.trunc,
        _zeros,
        kind="same",
        aliases=("fix",),
        check=_no_bool("trunc", "trunc is not supported for complex inputs"),
    ),
    Unary(
        "frac",
        lambda x: x - np.trunc(x),
        lambda g, x, o: g,
        kind="same",
        float_only=True,
        uses="none",
        arrays=True,
        check=_frac_check,
    ),
    Unary("sgn", _sgn, _zeros, kind="same", notes="sign for real tensors."),
    Unary("angle", _angle, _zeros, inplace=False, notes="0 or π for real input."),
    # -- predicates (bool results, no gradient) --
    Unary("isnan", np.isnan, kind="bool", inplace=False),
    Unary("isinf", np.isinf, kind="bool", inplace=False),
    Unary("isfinite", np.isfinite, kind="bool", inplace=False),
    Unary("isposinf", np.isposinf, kind="bool", inplace=False),
    Unary("isneginf", np.isneginf, kind="bool", inplace=False),
    Unary("isreal", lambda x: np.ones(x.shape, bool), kind="bool", inplace=False),
    Unary("signbit", np.signbit, kind="bool", inplace=False),
    Unary("logical_not", np.logical_not, kind="bool"),
    Unary("bitwise_not", np.invert, kind="int"),
    # -- scaled Bessel, normal distribution, entropy (tg.special) --
    Unary(
        "special_i0e",
        sc.i0e,
        lambda g, x, o: g * (_special("special_i1e")(x) - x.sign() * o),
        method=False,
        function=False,
        inplace=False,
        special="i0e",
        uses="both",
    ),
    Unary(
        "special_i1",
        sc.i1,
        _i1_grad,
        method=False,
        function=False,
        inplace=False,
        special="i1",
        uses="both",
    ),
    Unary(
        "special_i1e",
        sc.i1e,
        _i1e_grad,
        method=False,
        function=False,
        inplace=False,
        special="i1e",
        uses="both",
    ),
    Unary(
        "special_erfcx",
        sc.erfcx,
        lambda g, x, o: g * (x * o * 2.0 - _TWO_OVER_SQRT_PI),
        method=False,
        function=False,
        inplace=False,
        special="erfcx",
        uses="both",
        arrays=True,
    ),
    Unary(
        "special_ndtr",
        sc.ndtr,
        lambda g, x, o: g * (x * x * -0.5).exp() * _INV_SQRT_2PI,
        method=False,
        function=False,
        inplace=False,
        special="ndtr",
    ),
    Unary(
        "special_ndtri",
        sc.ndtri,
        lambda g, x, o: g * (o * o * 0.5).exp() * _SQRT_2PI,
        domain=(0.1, 0.9),
        method=False,
        function=False,
        inplace=False,
        special="ndtri",
        uses="out",
    ),
    Unary(
        "special_log_ndtr",
        sc.log_ndtr,
        lambda g, x, o: g * (x * x * -0.5 - o).exp() * _INV_SQRT_2PI,
        domain=(-4.0, 3.0),
        method=False,
        function=False,
        inplace=False,
        special="log_ndtr",
        uses="both",
    ),
    Unary(
        "special_entr",
        sc.entr,
        lambda g, x, o: g * -(x.log() + 1.0),
        domain=(0.1, 2.0),
        method=False,
        function=False,
        inplace=False,
        special="entr",
        notes="−x·log x; −inf for x < 0.",
    ),
]

# Bessel and Airy functions: values only; PyTorch records no gradient for them either.
for _name, _kernel in (
    ("bessel_j0", sc.j0),
    ("bessel_j1", sc.j1),
    ("bessel_y0", sc.y0),
    ("bessel_y1", sc.y1),
    ("modified_bessel_i0", sc.i0),
    ("modified_bessel_i1", sc.i1),
    ("modified_bessel_k0", sc.k0),
    ("modified_bessel_k1", sc.k1),
    ("scaled_modified_bessel_k0", sc.k0e),
    ("scaled_modified_bessel_k1", sc.k1e),
    ("spherical_bessel_j0", lambda x: sc.spherical_jn(0, x)),
    ("airy_ai", lambda x: sc.airy(x)[0]),
):
    UNARY.append(
        Unary(
            f"special_{_name}",
            _kernel,
            None,
            method=False,
            function=False,
            inplace=False,
            special=_name,
            notes="no gradient (as PyTorch).",
        )
    )

FUNCTIONS = install(UNARY, make_unary)
_ = NOT_IMPLEMENTED  # rows may use it; re-exported for the docs generator
