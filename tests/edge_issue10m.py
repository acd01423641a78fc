"""0-d and empty rows for test_edge_shapes, for the ops of issue 10 part M (tg.masked and
the numeric utilities)."""


def _masked(name, *args, **kw):
    # an all-true mask: a masked-out 0-d input is ±inf/NaN, which gradcheck cannot difference
    return lambda m, x: getattr(m.masked, name)(x, *args, mask=x == x, **kw)


def _picks(name):
    """Masked reductions that pick an element refuse an empty reduced dim, as torch's do:
    the message names the underlying op."""
    return ("masked." + name, "nan" + name if name == "median" else name)


def _histogramdd(m, x):
    hist, edges = m.histogramdd(x, 2)
    return (hist, *edges)


def rows(E, X, B, U):
    """The rows, built with test_edge_shapes' row classes and shape lists."""
    R = [[(0,)], [(2, 0)]]  # empty variants of a reduction over everything / the last dim
    L = [[(0, 3)], [(3, 0)]]  # empty variants of a reduction along the last dim
    SQ = [[(0, 0)], [(2, 0, 0)]]
    return [
        E("masked.sum", _masked("sum"), [()], R),
        E("masked.sum", _masked("sum", -1), [()], L, name="dim"),
        E("masked.prod", _masked("prod", -1), [()], L),
        E(
            "masked.amax",
            _masked("amax", -1),
            [()],
            [[(0, 3)], X([(3, 0)])],
            names=_picks("amax"),
        ),
        E(
            "masked.amin",
            _masked("amin", -1),
            [()],
            [[(0, 3)], X([(3, 0)])],
            names=_picks("amin"),
        ),
        E(
            "masked.argmax",
            _masked("argmax", -1),
            [()],
            [[(0, 3)], X([(3, 0)])],
            names=_picks("argmax"),
        ),
        E(
            "masked.argmin",
            _masked("argmin", -1),
            [()],
            [[(0, 3)], X([(3, 0)])],
            names=_picks("argmin"),
        ),
        E("masked.logsumexp", _masked("logsumexp", -1), [()], L),
        E("masked.cumsum", _masked("cumsum", -1), [()], L),
        E("masked.cumprod", _masked("cumprod", -1), [()], L),
        E("masked.softmax", _masked("softmax", -1), [()], L),
        E("masked.log_softmax", _masked("log_softmax", -1), [()], L),
        E("masked.softmin", _masked("softmin", -1), [()], L),
        E("masked.mean", _masked("mean", -1), [()], L),
        E(
            "masked.median",
            _masked("median", -1),
            [()],
            [[(0, 3)], X([(3, 0)])],
            names=_picks("median"),
        ),
        E("masked.norm", _masked("norm", 2.0, -1), [()], L),
        E("masked.var", _masked("var", -1), [()], L, nan0d=True),
        E("masked.std", _masked("std", -1), [()], L, nan0d=True),
        E("masked.normalize", _masked("normalize", 2.0, -1), [()], L),
        E(
            "masked.logaddexp",
            lambda m, a, b: m.masked.logaddexp(a, b, input_mask=a > -1),
            [(), ()],
            [[(0, 3), (0, 3)]],
        ),
        E("diff", lambda m, x: m.diff(x), X([()]), [[(0,)], [(2, 0)], [(0, 3)]]),
        E("gradient", lambda m, x: m.gradient(x), [()], [X([(0,)]), X([(2, 0)])]),
        E("trapezoid", lambda m, y: m.trapezoid(y), X([()]), [[(0,)], [(2, 0)], [(0, 3)]]),
        E(
            "cumulative_trapezoid",
            lambda m, y: m.cumulative_trapezoid(y),
            X([()]),
            [[(0,)], [(2, 0)], [(0, 3)]],
        ),
        E("cov", lambda m, x: m.cov(x), [()], [[(0,)], [(2, 0)], [(0, 3)]], nan0d=True),
        E(  # the empty variants are NaN matrices: no double backward to compare
            "corrcoef",
            lambda m, x: m.corrcoef(x),
            [()],
            [[(0,)], [(2, 0)]],
            nan0d=True,
            gradgrad=False,
        ),
        E("dist", lambda m, a, b: m.dist(a, b), [(), ()], B),
        E("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0), X([()]), [[(0, 3)], [(3, 0)]]),
        E("logdet", lambda m, a: m.logdet(a), X([()]), SQ, domain=(0.5, 2.0)),
        E("fill", lambda m, x, v: m.fill(x, v), [(), ()], [[(0,), ()], [(2, 0), ()]]),
        E("broadcast_tensors", lambda m, a, b: m.broadcast_tensors(a, b), [(), ()], B),
        E("sum_to_size", lambda m, x: x.sum_to_size(()), [()], [[(0,)], [(2, 0)]]),
        E("combinations", lambda m, x: m.combinations(x), X([()]), [[(0,)]]),
        E("histogram", lambda m, x: m.histogram(x, 3), [()], [[(0,)], [(2, 0)]]),
        E("histogramdd", _histogramdd, X([()]), [[(0, 2)], [(3, 0)]]),
        E("isin", lambda m, x, y: m.isin(x, y), [(), ()], [[(0,), (3,)], [(3,), (0,)]]),
        E("nonzero_static", lambda m, x: m.nonzero_static(x, size=2), [()], [[(0,)], [(2, 0)]]),
        E("hash_tensor", lambda m, x: m.hash_tensor(x), [()], [X([(0,)])]),
        E("hash_tensor", lambda m, x: m.hash_tensor(x, -1), [()], [[(0, 3)]], name="dim"),
    ]
