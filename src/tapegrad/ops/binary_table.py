"""Elementwise functions of two broadcast operands, as a table (Note [Op tables]).

Derivatives get ``g`` (incoming gradient), ``a``, ``b`` (the operands as Tensors; a Python
number arrives as a 0-d Tensor) and ``o`` (the output); the generated op sums each
gradient back to its operand's shape. The division family (fmod, remainder, floor_divide)
lives in ops/arithmetic.py.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from ..tensor import Tensor
from ._registry import add_alias
from ._table import NOT_IMPLEMENTED, Binary, install, make_binary

__all__ = ["BINARY", "FUNCTIONS"]

_LN2 = math.log(2.0)


def _zeros_b(g, a, b, o):
    return Tensor._wrap(np.zeros(g._data.shape, g._data.dtype))


def _mask(array, dtype):
    return Tensor._wrap(np.asarray(array, dtype))


def _raise(what):
    def grad(*_):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")

    return grad


def _copysign_grad(g, a, b, o):
    # d/da copysign(a, b) = out / a (±1), and 0 where a == 0 (as PyTorch).
    ad, od = np.broadcast_arrays(a._data, o._data)
    with np.errstate(all="ignore"):
        ratio = np.where(ad == 0, 0.0, od / np.where(ad == 0, 1.0, ad))
    return g * _mask(ratio, g._data.dtype)


def _fmax_grads(ge):
    def first(g, a, b, o):
        ad, bd = a._data, b._data
        return g * _mask(ge(ad, bd) | np.isnan(bd), g._data.dtype)

    def second(g, a, b, o):
        ad, bd = a._data, b._data
        return g * _mask(~(ge(ad, bd) | np.isnan(bd)), g._data.dtype)

    return first, second


def _xlogy_grads(log, edge):
    # torch: xlogy(g, y) (xlog1py(g, y)), with 0 where x == 0 and y <= edge (0, or -1 for
    # xlog1py), where the value is 0 whatever y; so log(y) where x == 0 < y.
    def first(g, a, b, o):
        zero = (a._data == 0) & (b._data <= edge)
        d = log(g, b)
        return d.masked_fill(Tensor._wrap(zero), 0.0) if zero.any() else d

    return first


def _igamma_grad(sign):
    # d/dx P(a, x) = e^(−x) x^(a−1) / Γ(a);  Q = 1 − P.
    def second(g, a, b, o):
        return g * ((a - 1.0) * b.log() - b - a.lgamma()).exp() * sign

    return second


def _xlogy_kernel(a, b):
    return sc.xlogy(a, b)


def _xlog1py_kernel(a, b):
    return sc.xlog1py(a, b)


def _logaddexp_kernel(a, b):
    """np.logaddexp, and for complex operands (NumPy has no loop) torch's formula:
    log1p(exp(min - max)) + max, ordered by real part; a NaN part gives NaN, equal infinite
    real parts -inf (the smaller operand) or log(exp(a) + exp(b))."""
    if np.result_type(a, b).kind != "c":
        return np.logaddexp(a, b)
    a, b = np.broadcast_arrays(a, b)
    swap = a.real >= b.real  # torch: min is a only where real(a) < real(b)
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    out = np.log1p(np.exp(lo - hi)) + hi
    both_inf = np.isinf(lo.real) & (lo.real == hi.real)
    out = np.where(both_inf & (lo.real < 0), lo, out)
    out = np.where(both_inf & (lo.real > 0), np.log(np.exp(lo) + np.exp(hi)), out)
    nan = np.isnan(lo.real) | np.isnan(lo.imag) | np.isnan(hi.real) | np.isnan(hi.imag)
    return np.where(nan, complex(np.nan, np.nan), out)


def _same_dtypes(a, b):
    if np.dtype(a).kind == "c" or np.dtype(b).kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if a != b:
        raise RuntimeError(
            f"heaviside is not yet implemented for tensors with different dtypes ({a} and {b})."
        )


def _no_bool(name):
    def check(a, b):
        if np.bool_ in (a, b):  # torch's dispatch stub: NotImplementedError
            raise NotImplementedError(
                f"{name}: \"{name}_cpu\" not implemented for 'Bool' (bool tensors)"
            )

    return check


def _shift(fn):
    def kernel(a, b):
        bits = np.asarray(a).dtype.itemsize * 8
        out = fn(a, np.clip(b, 0, bits - 1))
        return np.where((np.asarray(b) >= bits) | (np.asarray(b) < 0), 0, out).astype(out.dtype)

    return kernel


BINARY = [
    Binary(
        "atan2",
        np.arctan2,
        (
            lambda g, a, b, o: g * b / (a * a + b * b),
            lambda g, a, b, o: -g * a / (a * a + b * b),
        ),
        domain=[(-2.0, 2.0), (0.5, 2.0)],
        aliases=("arctan2",),
    ),
    Binary(
        "hypot",
        np.hypot,
        (lambda g, a, b, o: g * a / o, lambda g, a, b, o: g * b / o),
        kind="same",
        float_only=True,
    ),
    Binary("copysign", np.copysign, (_copysign_grad, _zeros_b), domain=[(0.2, 2.0), (-2.0, 2.0)]),
    Binary(
        "logaddexp",
        _logaddexp_kernel,
        (lambda g, a, b, o: g * (a - b).sigmoid(), lambda g, a, b, o: g * (b - a).sigmoid()),
        kind="same",
        inplace=False,
        float_only=True,
        notes="log(e^x + e^y), stably (kernel `numpy.logaddexp`; complex operands by torch's "
        "formula).",
    ),
    Binary(
        "logaddexp2",
        np.logaddexp2,
        (
            lambda g, a, b, o: g * ((a - b) * _LN2).sigmoid(),
            lambda g, a, b, o: g * ((b - a) * _LN2).sigmoid(),
        ),
        kind="same",
        inplace=False,
        float_only=True,
    ),
    Binary(
        "xlogy",
        _xlogy_kernel,
        (_xlogy_grads(lambda m, b: m.xlogy(b), 0.0), lambda g, a, b, o: g * a / b),
        domain=[(-2.0, 2.0), (0.2, 3.0)],
        special="xlogy",
        notes="0 where x == 0 (unless y is NaN).",
        real_only="stub",
    ),
    Binary(
        "special_xlog1py",
        _xlog1py_kernel,
        (
            _xlogy_grads(lambda m, b: _xlog1py(m, b), -1.0),
            lambda g, a, b, o: g * a / (b + 1.0),
        ),
        domain=[(-2.0, 2.0), (-0.5, 3.0)],
        method=False,
        function=False,
        inplace=False,
        special="xlog1py",
        real_only="stub",
    ),
    Binary(
        "fmax",
        np.fmax,
        _fmax_grads(np.greater_equal),
        kind="same",
        inplace=False,
        notes="NaN-ignoring maximum.",
        real_only="runtime",
    ),
    Binary(
        "fmin",
        np.fmin,
        _fmax_grads(np.less_equal),
        kind="same",
        inplace=False,
        notes="NaN-ignoring minimum.",
        real_only="runtime",
    ),
    Binary(
        "nextafter",
        np.nextafter,
        (lambda g, a, b, o: g, _zeros_b),
        kind="same",
        float_only=True,
        notes="Gradient g to the first argument, 0 to the second (as PyTorch).",
    ),
    Binary("heaviside", np.heaviside, NOT_IMPLEMENTED, kind="same", check=_same_dtypes),
    Binary(
        "igamma",
        sc.gammainc,
        (_raise("igamma: input"), _igamma_grad(1.0)),
        float_only=True,
        domain=[(0.5, 3.0), (0.2, 3.0)],
        special="gammainc",
        notes="Regularized lower incomplete gamma; no gradient wrt the first argument.",
    ),
    Binary(
        "igammac",
        sc.gammaincc,
        (_raise("igammac: input"), _igamma_grad(-1.0)),
        float_only=True,
        domain=[(0.5, 3.0), (0.2, 3.0)],
        special="gammaincc",
        notes="Regularized upper incomplete gamma; no gradient wrt the first argument.",
    ),
    Binary(
        "special_zeta",
        sc.zeta,
        NOT_IMPLEMENTED,
        method=False,
        function=False,
        inplace=False,
        special="zeta",
        notes="Hurwitz zeta; backward raises (as PyTorch).",
    ),
    # -- integer and logical ops (no gradient) --
    Binary("bitwise_and", np.bitwise_and, kind="int"),
    Binary("bitwise_or", np.bitwise_or, kind="int"),
    Binary("bitwise_xor", np.bitwise_xor, kind="int"),
    Binary("gcd", np.gcd, kind="int", check=_no_bool("gcd")),
    Binary("lcm", np.lcm, kind="int", check=_no_bool("lcm")),
    Binary(
        "bitwise_left_shift",
        _shift(np.left_shift),
        kind="int",
        check=_no_bool("bitwise_left_shift"),
    ),
    Binary(
        "bitwise_right_shift",
        _shift(np.right_shift),
        kind="int",
        check=_no_bool("bitwise_right_shift"),
    ),
    Binary("logical_and", np.logical_and, kind="bool"),
    Binary("logical_or", np.logical_or, kind="bool"),
    Binary("logical_xor", np.logical_xor, kind="bool"),
]


def _xlog1py(mask, b):
    from ._registry import OPS  # noqa: PLC0415

    return OPS["special_xlog1py"].fn(mask, b)


FUNCTIONS = install(BINARY, make_binary)

Tensor.__lshift__ = FUNCTIONS["bitwise_left_shift"]
Tensor.__rshift__ = FUNCTIONS["bitwise_right_shift"]

# PyTorch's other names for the comparisons of ops/arithmetic.py.
for _alias, _name in (
    ("greater", "gt"),
    ("greater_equal", "ge"),
    ("less", "lt"),
    ("less_equal", "le"),
    ("not_equal", "ne"),
):
    add_alias(_alias, _name)
