"""Table rows: arithmetic and casts."""

import numpy as np

from . import FLOAT32_TOL, OpCase

CASES = [
    OpCase("add", lambda m, x, y: x + y, [(3, 4), (3, 4)]),
    OpCase("add", lambda m, x, y: x + y, [(32, 4), (4,)], name="bias-broadcast"),
    OpCase("add", lambda m, x, y: m.add(x, y, alpha=2.0), [(2, 1, 3), (4, 1)], name="alpha"),
    OpCase("add", lambda m, x: 2.0 + x, [(3,)], name="scalar"),
    OpCase("add", lambda m, x, y: x + y, [(), (2, 3)], name="0d"),
    OpCase("sub", lambda m, x, y: x - y, [(2, 3), (3,)]),
    OpCase("sub", lambda m, x: 1.5 - x, [(4,)], name="rsub"),
    OpCase("mul", lambda m, x, y: x * y, [(2, 3), (2, 3)]),
    OpCase("mul", lambda m, x, y: x * y, [(5, 1, 3), (4, 1)], name="broadcast"),
    OpCase("mul", lambda m, x: x * 3.0, [(3,)], name="scalar"),
    OpCase("mul", lambda m, x: x * x, [(3,)], name="same-input"),
    OpCase("div", lambda m, x, y: x / y, [(2, 3), (3,)], domain=[(-2, 2), (0.5, 2)]),
    OpCase("div", lambda m, x: 2.0 / x, [(4,)], domain=(0.5, 2), name="rdiv"),
    OpCase("neg", lambda m, x: -x, [(2, 3)]),
    OpCase("pow", lambda m, x: x**3, [(2, 3)], name="int-exponent"),
    OpCase("pow", lambda m, x: x**2.5, [(4,)], domain=(0.5, 2), name="float-exponent"),
    OpCase("pow", lambda m, x: x**0, [(4,)], name="zero-exponent"),
    OpCase("pow", lambda m, x, y: x**y, [(2, 3), (3,)], domain=[(0.5, 2), (-1, 2)], name="tensor"),
    OpCase("pow", lambda m, x: 2.0**x, [(4,)], name="rpow"),
    OpCase("clone", lambda m, x: x.clone() * 2.0, [(2, 2)]),
    OpCase(
        "_cast",
        lambda m, x: x.float().double() * 2.0,
        [(3,)],
        **FLOAT32_TOL,
        tol_reason="the value passes through float32: a step of 1e-6 is below its resolution",
    ),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("sub", lambda m, x, y: x - y, [(), ()], name="0d"),
    OpCase("mul", lambda m, x, y: x * y, [(0, 3), (3,)], name="empty-broadcast"),
    OpCase("div", lambda m, x, y: x / y, [(), (2,)], domain=[(-2, 2), (0.5, 2)], name="0d"),
    OpCase("pow", lambda m, x, y: x**y, [(), ()], domain=[(0.5, 2), (-1, 2)], name="0d"),
    OpCase("neg", lambda m, x: -x, [(2, 0, 3)], name="empty"),
]

# remainder: away from the jumps of floor(a/b) (a/b near an integer)
CASES += [
    OpCase(
        "remainder",
        lambda m, x, y: m.remainder(x, y),
        [(2, 3), (3,)],
        inputs=lambda rng: [
            rng.uniform(0.1, 0.9, (2, 3)) + rng.integers(-3, 3, (2, 3)),
            np.full(3, 1.0),
        ],
    ),
    OpCase(
        "remainder",
        lambda m, x: x % 0.7,
        [(5,)],
        name="scalar",
        inputs=lambda rng: [0.7 * (rng.integers(-4, 4, 5) + rng.uniform(0.1, 0.9, 5))],
    ),
]
