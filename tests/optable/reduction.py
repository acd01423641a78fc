"""Table rows: sum and mean."""

import numpy as np

from . import OpCase

CASES = [
    OpCase("sum", lambda m, x: x.sum(), [(3, 4)]),
    OpCase("sum", lambda m, x: x.sum(dim=1), [(3, 4)], name="dim"),
    OpCase("sum", lambda m, x: x.sum(dim=(0, 2), keepdim=True), [(2, 3, 4)], name="keepdim"),
    OpCase("sum", lambda m, x: x.sum(-1), [(0, 3)], name="empty"),
    OpCase("sum", lambda m, x: x.sum(), [()], name="0d"),
    OpCase("mean", lambda m, x: x.mean(), [(3, 4)]),
    OpCase("mean", lambda m, x: x.mean(dim=0, keepdim=True), [(3, 4)], name="dim"),
    OpCase("mean", lambda m, x: x.mean(dim=(-1, -2)), [(2, 3, 4)], name="dims"),
]


# -- math reductions (issue 3) ------------------------------------------------------------


def _with_zeros(shape, zeros):
    """Uniform inputs away from 0, with exact zeros at the flat positions ``zeros``."""

    def make(rng):
        x = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        x.reshape(-1)[list(zeros)] = 0.0
        return [x]

    return make


def _ties(shape, dims=None, pick=np.argmax):
    """Distinct values, except that each reduced slice's extreme appears exactly twice.

    (A central difference sees a two-way tie as a gradient of 1/2, the even split; with
    k > 2 tied entries it would still see 1/2 while the even split is 1/k.)
    """
    dims = tuple(range(len(shape))) if dims is None else dims
    kept = [d for d in range(len(shape)) if d not in dims]

    def make(rng):
        x = rng.permutation(np.prod(shape)).reshape(shape) / 4.0 - 1.0
        rows = (
            np.moveaxis(x, kept, range(len(kept)))
            .reshape(int(np.prod([shape[d] for d in kept])), -1)
            .copy()
        )
        for row in rows:
            i = pick(row)
            row[(i + 1) % row.size] = row[i]
        moved = rows.reshape([shape[d] for d in kept] + [shape[d] for d in dims])
        return [np.moveaxis(moved, range(len(kept)), kept)]

    return make


_NONZERO = _with_zeros((3, 4), ())

CASES += [
    OpCase("var", lambda m, x: x.var(), [(3, 4)]),
    OpCase("var", lambda m, x: m.var(x, dim=1, keepdim=True), [(3, 4)], name="dim-keepdim"),
    OpCase("var", lambda m, x: x.var(0, unbiased=False), [(3, 4)], name="unbiased-false"),
    OpCase("var", lambda m, x: x.var(dim=(0, 2), correction=2), [(2, 3, 4)], name="correction"),
    OpCase("std", lambda m, x: x.std(), [(3, 4)]),
    OpCase("std", lambda m, x: m.std(x, dim=-1, keepdim=True), [(3, 4)], name="dim"),
    OpCase("prod", lambda m, x: x.prod(), [(3, 4)], inputs=_NONZERO),
    OpCase("prod", lambda m, x: m.prod(x, 1, keepdim=True), [(3, 4)], name="dim", inputs=_NONZERO),
    OpCase(
        "prod", lambda m, x: x.prod(1), [(3, 4)], name="one-zero", inputs=_with_zeros((3, 4), (1,))
    ),
    OpCase(
        "prod",
        lambda m, x: x.prod(0),
        [(3, 4)],
        name="zeros",
        inputs=_with_zeros((3, 4), (0, 4, 5, 11)),
    ),
    OpCase(
        "prod",
        lambda m, x: x.prod(),
        [(2, 3)],
        name="all-two-zeros",
        inputs=_with_zeros((2, 3), (1, 4)),
    ),
    OpCase("prod", lambda m, x: x.prod(), [()], name="0d"),
    OpCase("prod", lambda m, x: x.prod(0), [(0, 3)], name="empty"),
    OpCase("max", lambda m, x: x.max(), [(3, 4)]),
    # At a tie the gradient jumps, so second derivatives are not checked there.
    OpCase(
        "max", lambda m, x: m.max(x), [(3, 4)], name="ties", inputs=_ties((3, 4)), gradgrad=False
    ),
    OpCase("max", lambda m, x: x.max(dim=1), [(3, 4)], name="dim"),
    OpCase("max", lambda m, x: m.max(x, -1, keepdim=True).values, [(2, 3, 4)], name="keepdim"),
    OpCase(
        "min",
        lambda m, x: x.min(),
        [(3, 4)],
        inputs=_ties((3, 4), pick=np.argmin),
        name="ties",
        gradgrad=False,
    ),
    OpCase("min", lambda m, x: x.min(0), [(3, 4)], name="dim"),
    OpCase(
        "amax",
        lambda m, x: x.amax(dim=(0, 2)),
        [(2, 3, 4)],
        inputs=_ties((2, 3, 4), (0, 2)),
        gradgrad=False,
    ),
    OpCase("amax", lambda m, x: m.amax(x, 1, keepdim=True), [(3, 4)], name="keepdim"),
    OpCase(
        "amin",
        lambda m, x: x.amin(),
        [(3, 4)],
        inputs=_ties((3, 4), pick=np.argmin),
        gradgrad=False,
    ),
    OpCase("amin", lambda m, x: m.amin(x, -1), [(3, 4)], name="dim"),
    OpCase("logsumexp", lambda m, x: x.logsumexp(1), [(3, 4)]),
    OpCase(
        "logsumexp", lambda m, x: m.logsumexp(x, (0, 1), keepdim=True), [(2, 3, 2)], name="dims"
    ),
    OpCase("logsumexp", lambda m, x: x.logsumexp(0), [()], name="0d"),
    OpCase("softmax", lambda m, x: x.softmax(1), [(3, 4)]),
    OpCase("softmax", lambda m, x: m.softmax(x, dim=0), [(3, 4)], name="dim0"),
    OpCase("softmax", lambda m, x: m.softmax(x, -1), [(2, 0)], name="empty"),
    OpCase("log_softmax", lambda m, x: x.log_softmax(-1), [(3, 4)]),
    OpCase("log_softmax", lambda m, x: m.log_softmax(x, 0), [(2, 3)], name="dim0"),
    OpCase("cumsum", lambda m, x: x.cumsum(1), [(3, 4)]),
    OpCase("cumsum", lambda m, x: m.cumsum(x, dim=0), [(3, 4)], name="dim0"),
    OpCase("cumsum", lambda m, x: x.cumsum(0), [()], name="0d"),
    OpCase("cumprod", lambda m, x: x.cumprod(1), [(3, 4)], inputs=_NONZERO),
    OpCase(
        "cumprod",
        lambda m, x: m.cumprod(x, dim=1),
        [(3, 4)],
        name="zeros",
        inputs=_with_zeros((3, 4), (1, 4, 7, 8, 9)),
    ),
    OpCase("norm", lambda m, x: x.norm(), [(3, 4)]),
    OpCase("norm", lambda m, x: m.norm(x, p=2, dim=1, keepdim=True), [(3, 4)], name="dim"),
    OpCase("norm", lambda m, x: x.norm(p=1, dim=0), [(3, 4)], name="p1", inputs=_NONZERO),
    OpCase("norm", lambda m, x: x.norm(p=float("inf"), dim=1), [(3, 4)], name="inf"),
    OpCase("norm", lambda m, x: x.norm(p=float("-inf")), [(3, 4)], name="-inf"),
    OpCase("norm", lambda m, x: x.norm(p=3, dim=(0, 1)), [(2, 2, 3)], name="p3"),
    OpCase("norm", lambda m, x: x.norm(p=0.5, dim=1), [(3, 4)], name="p0.5", inputs=_NONZERO),
    OpCase(
        "norm",
        lambda m, x: x.norm(dim=1),
        [(2, 3)],
        name="zero-row",
        gradgrad=False,
        inputs=_with_zeros((2, 3), (0, 1, 2)),
    ),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("mean", lambda m, x: x.mean(), [()], name="0d"),
    OpCase("mean", lambda m, x: x.mean(1), [(0, 3)], name="empty"),
    OpCase("var", lambda m, x: x.var(correction=0), [()], name="0d"),
    OpCase("logsumexp", lambda m, x: x.logsumexp(1), [(0, 3)], name="empty"),
    OpCase("softmax", lambda m, x: x.softmax(0), [()], name="0d"),
    OpCase("log_softmax", lambda m, x: x.log_softmax(1), [(0, 3)], name="empty"),
    OpCase("cumsum", lambda m, x: x.cumsum(1), [(2, 0)], name="empty"),
    OpCase("cumprod", lambda m, x: x.cumprod(0), [()], name="0d"),
    OpCase("max", lambda m, x: x.max(0), [(3, 0)], name="empty-dim"),
    OpCase("max", lambda m, x: x.max(), [()], name="0d"),
    OpCase("amin", lambda m, x: x.amin(1), [(0, 3)], name="empty"),
    OpCase("norm", lambda m, x: x.norm(dim=1), [(0, 3)], name="empty"),
    OpCase("prod", lambda m, x: x.prod(), [(2, 0)], name="empty-all"),
]
