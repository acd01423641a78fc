"""0-d and empty rows for test_edge_shapes, for the ops of issue 10 (second half)."""


def rows(E, X, B, U, DIV):
    """The rows, built with test_edge_shapes' row classes and shape lists."""
    R = [[(0,)], [(2, 0)]]  # empty variants of a reduction along the last dim
    M = [[(0, 3)], [(3, 0)]]  # empty variants of a reduction along dim 1
    return [
        E("fmod", lambda m, x, y: m.fmod(x, y), [(), ()], B, domain=DIV),
        E("sort", lambda m, x: m.sort(x), [()], R),
        E("argsort", lambda m, x: m.argsort(x), [()], R),
        E("msort", lambda m, x: m.msort(x), [()], [[(0,)], [(0, 2)]]),
        E("topk", lambda m, x: m.topk(x, 1).values, [()], [X([(2, 0)]), [(0, 3)]]),
        E("kthvalue", lambda m, x: m.kthvalue(x, 1).values, [()], [X([(0,)])]),
        E("median", lambda m, x: m.median(x), [()], [[(0,)], [(2, 0)]]),
        E("median", lambda m, x: m.median(x, 0).values, [()], [X([(0,)])], name="dim"),
        E("nanmedian", lambda m, x: m.nanmedian(x), [()], [[(0,)]]),
        E("mode", lambda m, x: m.mode(x, 0).values, [()], [X([(0, 3)]), [(3, 0)]]),
        E("quantile", lambda m, x: m.quantile(x, 0.5), [()], [X([(0,)])]),
        E("nanquantile", lambda m, x: m.nanquantile(x, 0.5, dim=0), [()], [X([(0, 2)])]),
        E("cummax", lambda m, x: m.cummax(x, 0).values, [()], [[(0,)], [(2, 0)]]),
        E("cummin", lambda m, x: m.cummin(x, -1).values, [()], [[(0,)], [(2, 0)]]),
        E("searchsorted", lambda m, s, v: m.searchsorted(s, v), X([(), ()]), [[(0,), (3,)]]),
        E(
            "bucketize",
            lambda m, x, b: m.bucketize(x, b),
            X([(), ()]),
            [[(0,), (3,)], [(2, 3), (0,)]],
        ),
        E("unique", lambda m, x: m.unique(x), [()], [[(0,)], [(2, 0)]]),
        E("unique_consecutive", lambda m, x: m.unique_consecutive(x), [()], [[(0,)]]),
        E("histc", lambda m, x: m.histc(x, 4, -1, 1), [()], [[(0,)]]),
        E("bincount", lambda m, x: m.bincount((x.abs() * 3).long()), X([()]), [[(0,)]]),
        E("all", lambda m, x: m.all(x > 0, dim=-1), [()], M),
        E("any", lambda m, x: m.any(x > 0), [()], M),
        E("count_nonzero", lambda m, x: m.count_nonzero(x > 0, dim=0), [()], M),
        E("nansum", lambda m, x: m.nansum(x, -1), [()], M),
        E("nanmean", lambda m, x: m.nanmean(x, 0), [()], M),
        E("aminmax", lambda m, x: m.aminmax(x, dim=0), [()], [X([(0, 3)]), [(3, 0)]]),
        E("std_mean", lambda m, x: m.std_mean(x, 0), [()], [[(0, 3)]], nan0d=True),
        E("var_mean", lambda m, x: m.var_mean(x, -1, correction=0), [()], [[(2, 0)]]),
        E("logcumsumexp", lambda m, x: m.logcumsumexp(x, 0), [()], [[(0,)], [(2, 0)]]),
    ]
