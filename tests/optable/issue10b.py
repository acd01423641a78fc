"""Table rows for issue 10's second half: division family, reductions and scans, sorting,
shape and view ops, indexing ops, tg.linalg additions."""

import numpy as np

from . import OpCase

CASES = []


def _away_from_multiples(shape, b):
    """a/b kept away from integers, where remainder and fmod jump."""

    def make(rng):
        q = rng.integers(-3, 3, size=shape) + rng.uniform(0.2, 0.8, size=shape)
        return [q * b, np.full(shape, b)]

    return make


CASES += [
    OpCase(
        "fmod",
        lambda m, a, b: m.fmod(a, b),
        [(3, 4), (3, 4)],
        inputs=_away_from_multiples((3, 4), 1.3),
    ),
    OpCase(
        "fmod",
        lambda m, a: m.fmod(a, -1.3),
        [(3, 4)],
        name="scalar",
        inputs=lambda rng: _away_from_multiples((3, 4), 1.3)(rng)[:1],
    ),
]


def _distinct(*shapes):
    """Values spaced at least 0.1 apart (no ties), so picked positions are stable under eps."""

    def make(rng):
        out = []
        for shape in shapes:
            n = int(np.prod(shape))
            out.append(
                (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n) - n * 0.05).reshape(shape)
            )
        return out

    return make


def _with_nan(shape, where):
    def make(rng):
        x = _distinct(shape)(rng)[0]
        x.reshape(-1)[list(where)] = np.nan
        return [x]

    return make


D35 = _distinct((3, 5))
D234 = _distinct((2, 3, 4))
CASES += [
    OpCase("sort", lambda m, x: m.sort(x, 1).values, [(3, 5)], inputs=D35),
    OpCase("sort", lambda m, x: x.sort(0, descending=True)[0], [(3, 5)], name="desc", inputs=D35),
    OpCase("sort", lambda m, x: x.sort().values, [()], name="0d", inputs=_distinct(())),
    OpCase("msort", lambda m, x: m.msort(x), [(3, 5)], inputs=D35),
    OpCase("topk", lambda m, x: x.topk(2).values, [(3, 5)], inputs=D35),
    OpCase(
        "topk",
        lambda m, x: m.topk(x, 2, 1, largest=False)[0],
        [(2, 3, 4)],
        name="smallest",
        inputs=D234,
    ),
    OpCase("kthvalue", lambda m, x: x.kthvalue(2, 1).values, [(3, 5)], inputs=D35),
    OpCase(
        "kthvalue",
        lambda m, x: x.kthvalue(3, 0, keepdim=True)[0],
        [(3, 5)],
        name="keepdim",
        inputs=D35,
    ),
    OpCase("median", lambda m, x: x.median(), [(3, 5)], inputs=D35),
    OpCase("median", lambda m, x: x.median(1).values, [(3, 5)], name="dim", inputs=D35),
    OpCase(
        "median",
        lambda m, x: m.median(x, 0, keepdim=True)[0],
        [(4, 5)],
        name="even",
        inputs=_distinct((4, 5)),
    ),
    OpCase(
        "nanmedian", lambda m, x: x.nanmedian(1).values, [(3, 5)], inputs=_with_nan((3, 5), (2, 7))
    ),
    OpCase(
        "nanmedian",
        lambda m, x: x.nanmedian(),
        [(3, 5)],
        name="all",
        inputs=_with_nan((3, 5), (4,)),
    ),
    OpCase("mode", lambda m, x: m.mode(x, 1).values, [(3, 5)], inputs=D35),
    OpCase("quantile", lambda m, x: m.quantile(x, 0.3), [(3, 5)], inputs=D35),
    OpCase(
        "quantile",
        lambda m, x: m.quantile(x, m.tensor([0.2, 0.75], dtype=x.dtype), dim=1, keepdim=True),
        [(3, 5)],
        name="dim",
        inputs=D35,
    ),
    OpCase(
        "quantile",
        lambda m, x: x.quantile(0.4, 0, interpolation="midpoint"),
        [(3, 5)],
        name="midpoint",
        inputs=D35,
    ),
    OpCase(
        "nanquantile",
        lambda m, x: m.nanquantile(x, 0.6, dim=1),
        [(3, 5)],
        inputs=_with_nan((3, 5), (2, 7)),
    ),
    OpCase("cummax", lambda m, x: m.cummax(x, 1).values, [(3, 5)], inputs=D35),
    OpCase("cummin", lambda m, x: x.cummin(0)[0], [(3, 5)], inputs=D35),
    OpCase("nansum", lambda m, x: x.nansum(1), [(3, 5)], inputs=_with_nan((3, 5), (2, 7))),
    OpCase(
        "nansum", lambda m, x: m.nansum(x), [(3, 5)], name="all", inputs=_with_nan((3, 5), (0,))
    ),
    OpCase(
        "nanmean",
        lambda m, x: x.nanmean(1, keepdim=True),
        [(3, 5)],
        inputs=_with_nan((3, 5), (2, 7)),
    ),
    OpCase("aminmax", lambda m, x: m.aminmax(x, dim=1), [(3, 5)], inputs=D35),
    OpCase("aminmax", lambda m, x: m.aminmax(x), [(3, 5)], name="all", inputs=D35),
    OpCase("std_mean", lambda m, x: m.std_mean(x, 1), [(3, 5)]),
    OpCase("var_mean", lambda m, x: m.var_mean(x, (0, 2), correction=0, keepdim=True), [(2, 3, 4)]),
    OpCase("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), [(3, 5)]),
    OpCase(
        "logcumsumexp", lambda m, x: x.logcumsumexp(0), [(3, 5)], name="large", domain=(20.0, 40.0)
    ),
]
