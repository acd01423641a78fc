"""Table rows: elementwise functions and where."""

import numpy as np

from . import OpCase, away_from

CASES = [
    OpCase("exp", lambda m, x: m.exp(x), [(2, 3)]),
    OpCase("log", lambda m, x: m.log(x), [(2, 3)], domain=(0.2, 3)),
    OpCase("sqrt", lambda m, x: m.sqrt(x), [(2, 3)], domain=(0.2, 3)),
    OpCase("tanh", lambda m, x: m.tanh(x), [(2, 3)]),
    OpCase("tanh", lambda m, x: x.tanh(), [()], name="0d"),
    OpCase("sigmoid", lambda m, x: m.sigmoid(x), [(2, 3)], domain=(-6, 6)),
    OpCase(
        "relu",
        lambda m, x: m.relu(x),
        [(3, 4)],
        inputs=lambda rng: [away_from([0], -2, 2)((3, 4))(rng)],
        gradgrad=True,
    ),
    OpCase("where", lambda m, x, y: m.where(x > 0, x, y), [(3, 4), (4,)]),
    OpCase(
        "where",
        lambda m, x: m.where(x > 0.5, x * 2.0, x.exp()),
        [(5,)],
        name="one-input",
        inputs=lambda rng: [away_from([0.5], -2, 2)((5,))(rng)],
    ),
]


# -- math ops (issue 3) -------------------------------------------------------------------


def _F(m):
    """Activation functions live in torch.nn.functional, and at top level in tapegrad."""
    return m.nn.functional if m.__name__ == "torch" else m


def _steps(offset, shape):
    """Inputs at least 0.1 from every point ``k + offset`` (the jumps of floor/round...)."""

    def make(rng):
        x = rng.uniform(-3, 3, size=shape)
        frac = (x - offset) - np.floor(x - offset)
        return [np.where(frac < 0.1, x + 0.2, np.where(frac > 0.9, x - 0.2, x))]

    return make


def _apart(a, b, gap=0.1):
    """Move entries of ``a`` at least ``gap`` away from the broadcast ``b`` (no ties or kinks)."""
    close = np.abs(a - b) < gap
    return np.where(close, b + 3 * gap, a)


def _clamp_inputs(lo_range, hi_range):
    def make(rng):
        lo = rng.uniform(*lo_range, size=(4,))
        hi = rng.uniform(*hi_range, size=(3, 1))
        x = _apart(_apart(rng.uniform(-2, 2, size=(3, 4)), lo), hi)
        return [_apart(x, lo), lo, hi]

    return make


def _pair(shape_a, shape_b):
    def make(rng):
        b = rng.uniform(-2, 2, size=shape_b)
        return [_apart(rng.uniform(-2, 2, size=shape_a), b), b]

    return make


_AWAY0 = away_from([0], -2, 2)

CASES += [
    OpCase("abs", lambda m, x: m.abs(x), [(3, 4)], inputs=lambda rng: [_AWAY0((3, 4))(rng)]),
    OpCase(
        "abs", lambda m, x: abs(x), [()], name="0d-operator", inputs=lambda rng: [_AWAY0(())(rng)]
    ),
    OpCase("abs", lambda m, x: x.abs(), [(0, 3)], name="empty"),
    OpCase("sign", lambda m, x: m.sign(x) * x, [(3, 4)], inputs=lambda rng: [_AWAY0((3, 4))(rng)]),
    OpCase("floor", lambda m, x: m.floor(x) * x, [(5,)], inputs=_steps(0.0, (5,))),
    OpCase("ceil", lambda m, x: x.ceil() * x, [(5,)], inputs=_steps(0.0, (5,))),
    OpCase("round", lambda m, x: m.round(x) + x, [(5,)], inputs=_steps(0.5, (5,))),
    OpCase(
        "round",
        lambda m, x: x.round(decimals=1) + x,
        [(5,)],
        name="decimals",
        inputs=lambda rng: [_steps(0.5, (5,))(rng)[0] / 10],
    ),
    OpCase("log1p", lambda m, x: m.log1p(x), [(2, 3)], domain=(-0.6, 2)),
    OpCase("expm1", lambda m, x: m.expm1(x), [(2, 3)]),
    OpCase("expm1", lambda m, x: x.expm1(), [()], name="0d"),
    OpCase("rsqrt", lambda m, x: m.rsqrt(x), [(2, 3)], domain=(0.3, 3)),
    OpCase("sin", lambda m, x: m.sin(x), [(2, 3)]),
    OpCase("sin", lambda m, x: x.sin(), [(0,)], name="empty"),
    OpCase("cos", lambda m, x: m.cos(x), [(2, 3)]),
    OpCase("tan", lambda m, x: m.tan(x), [(2, 3)], domain=(-1.2, 1.2)),
    OpCase("erf", lambda m, x: m.erf(x), [(2, 3)]),
    OpCase("erf", lambda m, x: x.erf(), [()], name="0d"),
    OpCase("gelu", lambda m, x: _F(m).gelu(x), [(2, 3)], domain=(-3, 3)),
    OpCase(
        "gelu",
        lambda m, x: _F(m).gelu(x, approximate="tanh"),
        [(2, 3)],
        name="tanh",
        domain=(-3, 3),
    ),
    OpCase("silu", lambda m, x: _F(m).silu(x), [(2, 3)], domain=(-4, 4)),
    OpCase("softplus", lambda m, x: _F(m).softplus(x), [(2, 3)], domain=(-4, 4)),
    OpCase(
        "softplus",
        lambda m, x: _F(m).softplus(x, beta=2.0, threshold=1.0),
        [(2, 4)],
        name="beta-threshold",
        inputs=lambda rng: [away_from([0.5], -2, 2)((2, 4))(rng)],
    ),
    OpCase(
        "clamp",
        lambda m, x: m.clamp(x, min=-0.5, max=0.5),
        [(3, 4)],
        inputs=lambda rng: [away_from([-0.5, 0.5], -2, 2)((3, 4))(rng)],
    ),
    OpCase(
        "clamp",
        lambda m, x: x.clamp(min=0.3),
        [(3, 4)],
        name="min-only",
        inputs=lambda rng: [away_from([0.3], -2, 2)((3, 4))(rng)],
    ),
    OpCase(
        "clamp",
        lambda m, x: m.clip(x, max=0.3),
        [()],
        name="clip-0d",
        inputs=lambda rng: [away_from([0.3], -2, 2)(())(rng)],
    ),
    OpCase(
        "clamp",
        lambda m, x, lo, hi: m.clamp(x, lo, hi),
        [(3, 4), (4,), (3, 1)],
        name="tensor-bounds",
        inputs=_clamp_inputs((-1.5, -0.3), (0.3, 1.5)),
    ),
    OpCase(
        "clamp",
        lambda m, x, lo, hi: x.clamp(min=lo, max=hi),
        [(3, 4), (4,), (3, 1)],
        name="min-gt-max",
        inputs=_clamp_inputs((0.5, 1.5), (-1.5, -0.3)),
    ),
    OpCase("maximum", lambda m, a, b: m.maximum(a, b), [(3, 4), (4,)], inputs=_pair((3, 4), (4,))),
    OpCase(
        "maximum",
        lambda m, a, b: a.maximum(b),
        [(), (2, 3)],
        name="0d-broadcast",
        inputs=_pair((), (2, 3)),
    ),
    OpCase(
        "minimum",
        lambda m, a, b: m.minimum(a, b),
        [(2, 1, 3), (4, 1)],
        inputs=_pair((2, 1, 3), (4, 1)),
    ),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("exp", lambda m, x: m.exp(x), [(0, 3)], name="empty"),
    OpCase("log", lambda m, x: m.log(x), [()], domain=(0.2, 3), name="0d"),
    OpCase("sigmoid", lambda m, x: m.sigmoid(x), [(2, 0)], name="empty"),
    OpCase("where", lambda m, x, y: m.where(x > 0, x, y), [(), ()], name="0d"),
    OpCase("where", lambda m, x, y: m.where(x > 0, x, y), [(0, 3), ()], name="empty"),
    OpCase("gelu", lambda m, x: _F(m).gelu(x), [()], name="0d"),
    OpCase("softplus", lambda m, x: _F(m).softplus(x), [(0,)], name="empty"),
    OpCase("maximum", lambda m, a, b: m.maximum(a, b), [(0, 3), (3,)], name="empty"),
]


# -- fused gradient rules (issue 16): PyTorch's aten.tanh_backward / aten.sigmoid_backward ----


def _fused(name):
    def fn(m, g, y):
        if m.__name__ == "torch":
            return getattr(m.ops.aten, name)(g, y)
        return m.ops.OPS["_" + name].fn(g, y)

    return fn


CASES += [
    OpCase("_tanh_backward", _fused("tanh_backward"), [(2, 3), (2, 3)], domain=(-0.9, 0.9)),
    OpCase("_tanh_backward", _fused("tanh_backward"), [(4, 2, 3), (2, 3)], name="batched"),
    OpCase("_sigmoid_backward", _fused("sigmoid_backward"), [(2, 3), (2, 3)], domain=(0.1, 0.9)),
    OpCase("_sigmoid_backward", _fused("sigmoid_backward"), [(3,), ()], name="bcast"),
    # issue 11: exact GELU's rule, one op (ops/gelu_kernels.py)
    OpCase("_gelu_backward", _fused("gelu_backward"), [(2, 3), (2, 3)], domain=(-3, 3)),
    OpCase("_gelu_backward", _fused("gelu_backward"), [(4, 2, 3), (2, 3)], name="batched"),
    OpCase("_gelu_backward", _fused("gelu_backward"), [(3,), ()], name="bcast"),
]
