"""Table rows generated from the elementwise op tables (Note [Op tables] in ops/_table.py),
plus the hand-written ops of ops/misc_math.py.

Every differentiable row of ``tapegrad.ops._table.ROWS`` gets a case on its own domain,
and its in-place variant a case on a non-leaf copy. Tolerances are PyTorch's gradcheck
defaults (atol=1e-5, rtol=1e-3).
"""

import numpy as np

from tapegrad.ops._table import ROWS, Binary

from . import OpCase, away_from

TOL = {"atol": 1e-5, "rtol": 1e-3}


def _call(row):
    """The op as ``fn(m, *xs)``: ``m.<name>`` or ``m.special.<name>``."""
    if row.function:
        return lambda m, *xs: getattr(m, row.name)(*xs)
    if row.special is None:  # an activation of nn.functional
        return lambda m, *xs: getattr(m.nn.functional, row.name)(*xs)
    return lambda m, *xs: getattr(m.special, row.special)(*xs)


def _inplace(name, row):
    if row.name == "threshold":
        return lambda m, x: (
            (x * 1.0).threshold_(0.5, -1.0)
            if m.__name__ != "torch"
            else (m.threshold_(x * 1.0, 0.5, -1.0))
        )
    if row.special is None and not row.method:  # F.elu(x, inplace=True)
        return lambda m, x: getattr(m.nn.functional, row.name)(x * 1.0, inplace=True)
    if getattr(row.grad, "__name__", "") == "_zeros":  # a step: torch's grad is a ZeroTensor
        return lambda m, x: getattr(x * 1.0, name)() * x
    return lambda m, x, *rest: getattr(x * 1.0, name)(*rest)


def _apart(shape_a, shape_b, lo=-2.0, hi=2.0, gap=0.1):
    def make(rng):
        b = rng.uniform(lo, hi, size=shape_b)
        a = rng.uniform(lo, hi, size=shape_a)
        return [np.where(np.abs(a - b) < gap, b + 3 * gap, a), b]

    return make


_SPECIAL_INPUTS = {
    "fmax": _apart((2, 3), (3,)),
    "fmin": _apart((2, 3), (3,)),
    "i0": lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
    "special_i1": lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
    "special_i1e": lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
    "special_i0e": lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
    "sinc": lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
}

# Activations: inputs away from their kinks.
for _name, _kinks, _lo, _hi in (
    ("elu", [0], -2, 2),
    ("celu", [0], -2, 2),
    ("selu", [0], -2, 2),
    ("leaky_relu", [0], -2, 2),
    ("softsign", [0], -2, 2),
    ("hardtanh", [-1, 1], -2, 2),
    ("relu6", [0, 6], -2, 8),
    ("hardsigmoid", [-3, 3], -5, 5),
    ("hardswish", [-3, 3], -5, 5),
    ("hardshrink", [-0.5, 0.5], -2, 2),
    ("softshrink", [-0.5, 0.5], -2, 2),
    ("threshold", [0.5], -2, 2),
):
    _SPECIAL_INPUTS[_name] = (lambda k, lo, hi: lambda rng: [away_from(k, lo, hi)((2, 3))(rng)])(
        _kinks, _lo, _hi
    )

CASES = []
for _row in ROWS.values():
    if not _row.differentiable:
        continue
    _binary = isinstance(_row, Binary)
    _shapes = [(2, 3), (3,)] if _binary else [(2, 3)]
    _inputs = _SPECIAL_INPUTS.get(_row.name)
    _fn = _call(_row)
    if getattr(_row.grad, "__name__", "") == "_zeros":  # a step: torch's grad is a ZeroTensor
        _fn = (lambda f: lambda m, x: f(m, x) * x)(_fn)
    if _row.name == "threshold":
        _fn = lambda m, x: m.nn.functional.threshold(x, 0.5, -1.0)  # noqa: E731
    if _row.name in ("igamma", "igammac"):  # no gradient wrt the first argument
        _shapes, _inputs = [(2, 3)], lambda rng: [rng.uniform(0.2, 3.0, (2, 3))]
        _fn = (lambda name: lambda m, x: getattr(m, name)(m.tensor(1.5, dtype=m.float64), x))(
            _row.name
        )
    CASES.append(OpCase(_row.name, _fn, _shapes, domain=_row.domain, inputs=_inputs, **TOL))
    if _row.name in ("igamma", "igammac"):
        _fn_ = (lambda name: lambda m, x: getattr(m.full((2, 3), 1.5, dtype=m.float64), name)(x))(
            f"{_row.name}_"
        )
        CASES.append(OpCase(f"{_row.name}_", _fn_, _shapes, inputs=_inputs, **TOL))
    elif _row.inplace:
        CASES.append(
            OpCase(
                f"{_row.name}_",
                _inplace(f"{_row.name}_", _row),
                _shapes,
                domain=_row.domain,
                inputs=_inputs,
                # PyTorch has no derivative for these in-place variants; tapegrad does.
                torch=_row.name not in ("asinh", "acosh", "atanh"),
                **TOL,
            )
        )
    if not _binary:
        CASES.append(
            OpCase(_row.name, _fn, [()], domain=_row.domain, name="0d", inputs=None, **TOL)
        )

# Binary rows with a Python number on one side.
CASES += [
    OpCase("atan2", lambda m, x: x.atan2(m.tensor(2.0, dtype=m.float64)), [(4,)], name="0d", **TOL),
    OpCase("xlogy", lambda m, x: m.xlogy(2.0, x), [(4,)], domain=(0.2, 3), name="scalar", **TOL),
    OpCase(
        "hypot", lambda m, x: m.hypot(x, m.ones(3, dtype=m.float64)), [(2, 3)], name="ones", **TOL
    ),
]

_AWAY = away_from([-0.5, 0.5], -2, 2)

# ops/misc_math.py
CASES += [
    OpCase("logit", lambda m, x: m.logit(x), [(2, 3)], domain=(0.1, 0.9), **TOL),
    OpCase(
        "logit",
        lambda m, x: m.logit(x, eps=0.2),
        [(6,)],
        name="eps",
        inputs=lambda rng: [away_from([0.2, 0.8], 0.05, 0.95)((6,))(rng)],
        **TOL,
    ),
    OpCase("logit_", lambda m, x: (x * 1.0).logit_(), [(2, 3)], domain=(0.1, 0.9), **TOL),
    OpCase("polygamma", lambda m, x: m.polygamma(1, x), [(2, 3)], domain=(0.5, 3), **TOL),
    OpCase("polygamma", lambda m, x: x.polygamma(2), [(4,)], domain=(0.5, 3), name="n2", **TOL),
    OpCase("mvlgamma", lambda m, x: m.mvlgamma(x, 3), [(2, 3)], domain=(1.5, 4), **TOL),
    OpCase("mvlgamma_", lambda m, x: (x * 1.0).mvlgamma_(p=2), [(3,)], domain=(1, 4), **TOL),
    OpCase(
        "nan_to_num",
        lambda m, x: m.nan_to_num(x.log(), nan=2.0),
        [(2, 3)],
        inputs=lambda rng: [away_from([0], -2, 2)((2, 3))(rng)],
        **TOL,
    ),
    OpCase("nan_to_num_", lambda m, x: (x * 1.0).nan_to_num_(), [(2, 3)], **TOL),
    OpCase("lerp", lambda m, a, b: m.lerp(a, b, 0.3), [(2, 3), (3,)], **TOL),
    OpCase("lerp", lambda m, a, b, w: m.lerp(a, b, w), [(2, 3), (2, 3), (3,)], name="w", **TOL),
    OpCase("lerp_", lambda m, a, b: (a * 1.0).lerp_(b, 0.7), [(2, 3), (3,)], **TOL),
    OpCase(
        "float_power",
        lambda m, a, b: m.float_power(a, b),
        [(2, 3), (3,)],
        domain=[(0.5, 2), (-1, 2)],
        **TOL,
    ),
    OpCase("float_power", lambda m, a: a.float_power(2), [(3,)], name="scalar", **TOL),
    OpCase(
        "float_power_", lambda m, a: (a * 1.0).float_power_(1.5), [(3,)], domain=(0.5, 2), **TOL
    ),
    OpCase("ldexp", lambda m, a, b: m.ldexp(a, b), [(2, 3), (3,)], **TOL),
    OpCase("ldexp_", lambda m, a, b: (a * 1.0).ldexp_(b), [(2, 3), (3,)], **TOL),
    OpCase(
        "clamp_min",
        lambda m, x: m.clamp_min(x, 0.5),
        [(2, 3)],
        inputs=lambda rng: [_AWAY((2, 3))(rng)],
        **TOL,
    ),
    OpCase(
        "clamp_max",
        lambda m, x: x.clamp_max(-0.5),
        [(2, 3)],
        inputs=lambda rng: [_AWAY((2, 3))(rng)],
        **TOL,
    ),
    OpCase(
        "clamp_min_",
        lambda m, x: (x * 1.0).clamp_min_(0.5),
        [(2, 3)],
        inputs=lambda rng: [_AWAY((2, 3))(rng)],
        **TOL,
    ),
    OpCase(
        "clamp_max_",
        lambda m, x: (x * 1.0).clamp_max_(0.5),
        [(2, 3)],
        inputs=lambda rng: [_AWAY((2, 3))(rng)],
        **TOL,
    ),
    OpCase("positive", lambda m, x: m.positive(x) * 2.0, [(2, 3)], **TOL),
    OpCase("rsub", lambda m, a, b: m.rsub(a, b, alpha=2.0), [(2, 3), (3,)], **TOL),
    OpCase("rsub", lambda m, a: m.rsub(a, 1.5), [(3,)], name="scalar", **TOL),
    OpCase("frexp", lambda m, x: m.frexp(x)[0], [(2, 3)], domain=(0.3, 0.45), **TOL),
    OpCase(
        "addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [(2, 3), (3,), (2, 1)], **TOL
    ),
    OpCase("addcmul_", lambda m, a, b, c: (a * 1.0).addcmul_(b, c), [(2, 3), (3,), (2, 1)], **TOL),
    OpCase(
        "addcdiv",
        lambda m, a, b, c: m.addcdiv(a, b, c, value=2),
        [(2, 3), (3,), (2, 1)],
        domain=[(-2, 2), (-2, 2), (0.5, 2)],
        **TOL,
    ),
    OpCase(
        "addcdiv_",
        lambda m, a, b, c: (a * 1.0).addcdiv_(b, c),
        [(2, 3), (3,), (2, 1)],
        domain=[(-2, 2), (-2, 2), (0.5, 2)],
        **TOL,
    ),
    *[
        OpCase(_n, (lambda n: lambda m, x: getattr(m, n)(x) * 2.0)(_n), [(2, 3)], **TOL)
        for _n in ("real", "conj", "conj_physical", "resolve_conj", "resolve_neg")
    ],
]
