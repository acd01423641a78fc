"""Table rows for issue 10 part M: tg.masked, the numeric utilities (diff, gradient,
trapezoid, cov, corrcoef, dist, renorm, logdet) and the broadcasting/fill helpers."""

import numpy as np

from . import OpCase

# no slice is all masked out along either dim (mean/var/std/softmax stay finite)
MASK = np.array([[True, False, True, True], [False, True, True, True], [True, True, False, True]])


def _distinct(shape, lo=-2.0):
    """Values at least 0.1 apart (no ties: amax/median pick one element under eps)."""

    def make(rng):
        n = int(np.prod(shape))
        return [(rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n) + lo).reshape(shape)]

    return make


def _mask(m):
    return m.tensor(MASK)


def _masked(name, *args, **kw):
    return lambda m, x: getattr(m.masked, name)(x, *args, mask=_mask(m), **kw)


CASES = [
    OpCase("masked.sum", _masked("sum", 1), [(3, 4)]),
    OpCase("masked.sum", _masked("sum", None), [(3, 4)], name="all"),
    OpCase("masked.prod", _masked("prod", 1, keepdim=True), [(3, 4)], domain=(0.5, 2.0)),
    OpCase("masked.amax", _masked("amax", 1), [(3, 4)], inputs=_distinct((3, 4))),
    OpCase("masked.amin", _masked("amin", (0, 1)), [(3, 4)], inputs=_distinct((3, 4))),
    OpCase("masked.logsumexp", _masked("logsumexp", 1), [(3, 4)]),
    OpCase("masked.cumsum", _masked("cumsum", 1), [(3, 4)]),
    OpCase("masked.cumprod", _masked("cumprod", 0), [(3, 4)], domain=(0.5, 2.0)),
    OpCase("masked.softmax", _masked("softmax", 1), [(3, 4)]),
    OpCase(
        "masked.log_softmax",  # masked-out outputs are -inf: compared where masked in
        lambda m, x: m.where(_mask(m), m.masked.log_softmax(x, 0, mask=_mask(m)), 0.0),
        [(3, 4)],
    ),
    OpCase("masked.softmin", _masked("softmin", 1), [(3, 4)]),
    OpCase("masked.mean", _masked("mean", 1, keepdim=True), [(3, 4)]),
    OpCase("masked.median", _masked("median", 1), [(3, 4)], inputs=_distinct((3, 4))),
    OpCase("masked.norm", _masked("norm", 2.0, 1), [(3, 4)], domain=(0.5, 2.0)),
    OpCase("masked.norm", _masked("norm", 3.0, None), [(3, 4)], domain=(0.5, 2.0), name="p3"),
    OpCase("masked.var", _masked("var", 1), [(3, 4)]),
    OpCase("masked.std", _masked("std", 0, correction=0), [(3, 4)]),
    OpCase("masked.normalize", _masked("normalize", 2.0, 1), [(3, 4)], domain=(0.5, 2.0)),
    OpCase(
        "masked.logaddexp",
        lambda m, a, b: m.masked.logaddexp(
            a, b, input_mask=_mask(m), other_mask=m.tensor(~MASK | MASK[::-1])
        ),
        [(3, 4), (3, 4)],
    ),
    OpCase(
        "diff",
        lambda m, x, p, a: m.diff(x, n=2, dim=1, prepend=p, append=a),
        [(3, 4), (3, 1), (3, 2)],
    ),
    OpCase("diff", lambda m, x: m.diff(x, dim=0), [(3, 4)], name="dim0"),
    OpCase(
        "gradient",
        lambda m, x: m.gradient(x, spacing=[2.0, 0.5], edge_order=2),
        [(4, 5)],
    ),
    OpCase(
        "gradient",
        lambda m, x: m.gradient(x, spacing=(m.tensor([0.0, 0.5, 1.5, 1.75, 3.0]),), dim=1),
        [(3, 5)],
        name="coordinates",
    ),
    OpCase(
        "gradient",
        lambda m, x: m.gradient(
            x, spacing=(m.tensor([0.0, 0.5, 1.5, 1.75, 3.0]),), dim=1, edge_order=2
        ),
        [(3, 5)],
        name="coordinates_order2",
    ),
    OpCase("trapezoid", lambda m, y, x: m.trapezoid(y, x, dim=0), [(4, 3), (4,)]),
    OpCase("trapezoid", lambda m, y: m.trapezoid(y, dx=0.5), [(3, 4)], name="dx"),
    OpCase(
        "cumulative_trapezoid",
        lambda m, y, x: m.cumulative_trapezoid(y, x),
        [(3, 4), (3, 4)],
    ),
    OpCase(
        "cumulative_trapezoid",
        lambda m, y: m.cumulative_trapezoid(y, dx=2.0, dim=0),
        [(3, 4)],
        name="dx",
    ),
    OpCase("cov", lambda m, x: m.cov(x), [(3, 5)]),
    OpCase(
        "cov",
        lambda m, x, aw: m.cov(x, correction=2, fweights=m.tensor([1, 2, 1, 3, 1]), aweights=aw),
        [(2, 5), (5,)],
        domain=[(-2.0, 2.0), (0.5, 2.0)],
        name="weights",
    ),
    OpCase("corrcoef", lambda m, x: m.corrcoef(x), [(3, 6)]),
    OpCase("dist", lambda m, a, b: m.dist(a, b, 3), [(3, 4), (4,)]),
    OpCase("dist", lambda m, a, b: m.dist(a, b), [(3, 4), (3, 4)], name="p2"),
    OpCase(
        "renorm",
        lambda m, x: m.renorm(x, 2, 0, 1.5),
        [(3, 4)],
        # rows scaled to norms 0.8 (kept) and 2.4, 3.3 (rescaled): away from the switch
        inputs=lambda rng: [
            (lambda x: x / np.linalg.norm(x, axis=1, keepdims=True) * [[0.8], [2.4], [3.3]])(
                rng.uniform(-1, 1, (3, 4))
            )
        ],
    ),
    OpCase(
        "logdet",
        lambda m, a: m.logdet(a),
        [(2, 3, 3)],
        inputs=lambda rng: [
            (lambda b: b @ np.swapaxes(b, -1, -2) + 3 * np.eye(3))(rng.uniform(-1, 1, (2, 3, 3)))
        ],
    ),
    OpCase("fill", lambda m, x, v: m.fill(x, v), [(3, 4), ()]),
    OpCase("broadcast_tensors", lambda m, a, b: m.broadcast_tensors(a, b), [(3, 1), (1, 4)]),
    OpCase("sum_to_size", lambda m, x: x.sum_to_size(1, 4), [(3, 4)]),
    OpCase("combinations", lambda m, x: m.combinations(x), [(4,)]),
    OpCase(
        "combinations",
        lambda m, x: m.combinations(x, 3, with_replacement=True),
        [(3,)],
        name="replacement",
    ),
]
