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

# -- triangles, diagonals, shape ops ------------------------------------------------------


def _idx(m, values):
    return m.tensor(values, dtype=m.int64)


CASES += [
    OpCase("tril", lambda m, x: m.tril(x), [(3, 4)]),
    OpCase("tril", lambda m, x: x.tril(-1), [(2, 3, 4)], name="batch-offset"),
    OpCase("triu", lambda m, x: x.triu(1), [(4, 3)]),
    OpCase("diagonal", lambda m, x: x.diagonal(), [(3, 4)]),
    OpCase("diagonal", lambda m, x: m.diagonal(x, -1, 2, 0), [(3, 2, 4)], name="dims"),
    OpCase("diag_embed", lambda m, x: m.diag_embed(x), [(2, 3)]),
    OpCase("diag_embed", lambda m, x: m.diag_embed(x, 1, 0, 2), [(2, 3)], name="offset"),
    OpCase("diag", lambda m, x: m.diag(x, -1), [(3,)]),
    OpCase("diag", lambda m, x: x.diag(1), [(3, 4)], name="matrix"),
    OpCase("diagflat", lambda m, x: m.diagflat(x), [(2, 2)]),
    OpCase("trace", lambda m, x: m.trace(x), [(3, 4)]),
    OpCase("t", lambda m, x: x.t(), [(3, 4)]),
    OpCase("ravel", lambda m, x: x.ravel(), [(2, 3)]),
    OpCase("swapaxes", lambda m, x: x.swapaxes(0, 2), [(2, 3, 4)]),
    OpCase("swapdims", lambda m, x: m.swapdims(x, -1, 0), [(2, 3)]),
    OpCase("select", lambda m, x: x.select(1, -1), [(2, 3, 4)]),
    OpCase("narrow_copy", lambda m, x: m.narrow_copy(x, 1, 1, 2), [(2, 3)]),
    OpCase("unbind", lambda m, x: m.unbind(x, 1), [(2, 3)]),
    OpCase("atleast_1d", lambda m, x: m.atleast_1d(x), [()]),
    OpCase("atleast_2d", lambda m, x, y: m.atleast_2d(x, y), [(3,), (2, 3)]),
    OpCase("atleast_3d", lambda m, x: m.atleast_3d(x), [(3,)]),
    OpCase("hstack", lambda m, x, y: m.hstack([x, y]), [(2, 3), (2, 1)]),
    OpCase("vstack", lambda m, x, y: m.vstack([x, y]), [(3,), (2, 3)]),
    OpCase("row_stack", lambda m, x, y: m.row_stack((x, y)), [(3,), (3,)]),
    OpCase("dstack", lambda m, x, y: m.dstack([x, y]), [(2, 3), (2, 3)]),
    OpCase("column_stack", lambda m, x, y: m.column_stack([x, y]), [(3,), (3, 2)]),
    OpCase("tensor_split", lambda m, x: m.tensor_split(x, 3, 1), [(2, 7)]),
    OpCase("tensor_split", lambda m, x: x.tensor_split([1, 4], dim=1), [(2, 7)], name="indices"),
    OpCase("hsplit", lambda m, x: m.hsplit(x, 2), [(2, 4)]),
    OpCase("vsplit", lambda m, x: m.vsplit(x, [1]), [(3, 2)]),
    OpCase("dsplit", lambda m, x: m.dsplit(x, 2), [(1, 2, 4)]),
    OpCase("rot90", lambda m, x: m.rot90(x), [(2, 3)]),
    OpCase("rot90", lambda m, x: x.rot90(-1, (2, 0)), [(2, 3, 4)], name="dims"),
    OpCase("fliplr", lambda m, x: m.fliplr(x), [(2, 3)]),
    OpCase("flipud", lambda m, x: m.flipud(x), [(2, 3)]),
    OpCase("view_as", lambda m, x, y: x.view_as(y), [(2, 3), (3, 2)]),
    OpCase("reshape_as", lambda m, x, y: x.reshape_as(y), [(2, 3), (6,)]),
    OpCase("expand_as", lambda m, x, y: x.expand_as(y), [(3,), (2, 3)]),
    OpCase("unfold", lambda m, x: x.unfold(1, 3, 2), [(2, 7)]),
    OpCase("repeat_interleave", lambda m, x: x.repeat_interleave(2), [(2, 3)]),
    OpCase(
        "repeat_interleave",
        lambda m, x: m.repeat_interleave(x, _idx(m, [1, 0, 3]), dim=1),
        [(2, 3)],
        name="counts",
    ),
    OpCase("kron", lambda m, x, y: m.kron(x, y), [(2, 3), (2, 2)]),
    OpCase("meshgrid", lambda m, x, y: m.meshgrid(x, y, indexing="xy"), [(3,), (2,)]),
    OpCase("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), [(3,), (2,)]),
    OpCase("block_diag", lambda m, x, y: m.block_diag(x, y), [(2, 3), (2,)]),
    # -- products ---------------------------------------------------------------------------
    OpCase("mm", lambda m, x, y: m.mm(x, y), [(3, 4), (4, 2)]),
    OpCase("bmm", lambda m, x, y: x.bmm(y), [(2, 3, 4), (2, 4, 2)]),
    OpCase("mv", lambda m, x, y: m.mv(x, y), [(3, 4), (4,)]),
    OpCase("dot", lambda m, x, y: m.dot(x, y), [(4,), (4,)]),
    OpCase("vdot", lambda m, x, y: m.vdot(x, y), [(4,), (4,)]),
    OpCase("inner", lambda m, x, y: m.inner(x, y), [(2, 4), (3, 4)]),
    OpCase(
        "tensordot", lambda m, x, y: m.tensordot(x, y, ([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 2)]
    ),
    OpCase(
        "addmm", lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=2), [(3, 2), (3, 4), (4, 2)]
    ),
    OpCase("addmv", lambda m, x, a, b: m.addmv(x, a, b), [(3,), (3, 4), (4,)]),
    OpCase("addr", lambda m, x, a, b: m.addr(x, a, b, alpha=-1), [(3, 4), (3,), (4,)]),
    OpCase("addbmm", lambda m, x, a, b: m.addbmm(x, a, b), [(3, 2), (2, 3, 4), (2, 4, 2)]),
    OpCase(
        "baddbmm", lambda m, x, a, b: m.baddbmm(x, a, b, beta=0), [(2, 3, 2), (2, 3, 4), (2, 4, 2)]
    ),
    OpCase("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), [(2, 3), (3, 4), (4, 2)]),
    OpCase("cross", lambda m, x, y: m.cross(x, y, dim=1), [(4, 3), (4, 3)]),
    OpCase("matrix_power", lambda m, x: m.matrix_power(x, 3), [(2, 3, 3)]),
    OpCase(
        "matrix_power",
        lambda m, x: m.linalg.matrix_power(x, -2),
        [(3, 3)],
        name="inverse",
        inputs=lambda rng: [rng.uniform(-0.5, 0.5, (3, 3)) + 2 * np.eye(3)],
    ),
    OpCase("cdist", lambda m, x, y: m.cdist(x, y), [(5, 3), (4, 3)]),
    OpCase(
        "cdist",
        lambda m, x, y: m.cdist(x, y, p=1.0),
        [(2, 3, 2), (2, 4, 2)],
        name="p1",
        gradgrad=False,
    ),
]

# -- index ops -------------------------------------------------------------------------------

_SCAT = [[0, 1, 0, 2], [2, 2, 0, 1]]
CASES += [
    OpCase(
        "index_add", lambda m, x, s: x.index_add(1, _idx(m, [0, 2]), s, alpha=2), [(3, 4), (3, 2)]
    ),
    OpCase(
        "index_add",
        lambda m, x, s: m.index_add(x, 0, _idx(m, [1, 1]), s),
        [(3, 4), (2, 4)],
        name="repeat",
    ),
    OpCase("index_copy", lambda m, x, s: x.index_copy(1, _idx(m, [3, 0]), s), [(3, 4), (3, 2)]),
    OpCase("index_fill", lambda m, x: x.index_fill(1, _idx(m, [0, 2]), -1.5), [(3, 4)]),
    OpCase(
        "index_fill", lambda m, x, v: x.index_fill(0, _idx(m, [1]), v), [(3, 4), ()], name="tensor"
    ),
    OpCase(
        "index_put",
        lambda m, x, v: x.index_put((_idx(m, [0, 0, 2]), _idx(m, [1, 1, 3])), v, accumulate=True),
        [(3, 4), (3,)],
    ),
    OpCase(
        "index_put", lambda m, x, v: x.index_put((_idx(m, [0, 2]),), v), [(3, 4), (4,)], name="rows"
    ),
    OpCase(
        "scatter_reduce",
        lambda m, x, s: x.scatter_reduce(0, _idx(m, _SCAT), s, "sum"),
        [(3, 4), (2, 4)],
    ),
    OpCase(
        "scatter_reduce",
        lambda m, x, s: x.scatter_reduce(0, _idx(m, _SCAT), s, "mean", include_self=False),
        [(3, 4), (2, 4)],
        name="mean",
    ),
    OpCase(
        "scatter_reduce",
        lambda m, x, s: x.scatter_reduce(0, _idx(m, _SCAT), s, "amax"),
        [(3, 4), (2, 4)],
        name="amax",
        inputs=_distinct((3, 4), (2, 4)),
    ),
    OpCase(
        "scatter_reduce",
        lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, _SCAT), s, "amin", include_self=False),
        [(3, 4), (2, 4)],
        name="amin",
        inputs=_distinct((3, 4), (2, 4)),
    ),
    OpCase(
        "scatter_reduce",
        lambda m, x, s: x.scatter_reduce(0, _idx(m, _SCAT), s, "prod"),
        [(3, 4), (2, 4)],
        name="prod",
        domain=(0.5, 1.5),
    ),
    OpCase(
        "index_reduce",
        lambda m, x, s: x.index_reduce(1, _idx(m, [0, 0]), s, "mean"),
        [(3, 4), (3, 2)],
    ),
    OpCase(
        "index_reduce",
        lambda m, x, s: x.index_reduce(1, _idx(m, [0, 3]), s, "amax", include_self=False),
        [(3, 4), (3, 2)],
        name="amax",
        inputs=_distinct((3, 4), (3, 2)),
    ),
    OpCase("masked_select", lambda m, x: x.masked_select(x > 0), [(3, 4)]),
    OpCase("masked_scatter", lambda m, x, s: x.masked_scatter(x > 0, s), [(3, 4), (12,)]),
    OpCase("take", lambda m, x: x.take(_idx(m, [[0, 5], [11, -1]])), [(3, 4)]),
    OpCase("put", lambda m, x, s: x.put(_idx(m, [0, 0, 5]), s, accumulate=True), [(3, 4), (3,)]),
    OpCase("put", lambda m, x, s: x.put(_idx(m, [1, 5, -1]), s), [(3, 4), (3,)], name="write"),
    OpCase(
        "scatter",
        lambda m, x, s: x.scatter(0, _idx(m, _SCAT), s, reduce="add"),
        [(3, 4), (2, 4)],
        name="reduce-add",
        torch=False,  # torch: "derivative for aten::scatter is not implemented"
    ),
]

# -- tg.linalg decompositions (functions of the factors that do not depend on their signs) --


def _usv(m, x):
    U, S, Vh = m.linalg.svd(x, full_matrices=False)
    return U @ m.diag_embed(S) @ Vh, U.abs(), Vh.abs(), S


def _sym(x):
    return x + x.mT


def _eig(m, x):
    L, V = m.linalg.eigh(_sym(x))
    return L, V * V[..., :1, :].sign()


CASES += [
    OpCase("linalg_svd", _usv, [(4, 3)], name="tall"),
    OpCase("linalg_svd", _usv, [(3, 5)], name="wide"),
    OpCase("linalg_svd", _usv, [(2, 3, 3)], name="batch"),
    OpCase("linalg_svd", lambda m, x: m.linalg.svdvals(x), [(4, 3)], name="svdvals"),
    OpCase("linalg_svd", lambda m, x: m.linalg.matrix_norm(x, "nuc"), [(4, 3)], name="nuc"),
    OpCase("linalg_svd", lambda m, x: m.linalg.matrix_norm(x, 2), [(3, 4)], name="norm2"),
    OpCase("linalg_svd", lambda m, x: m.linalg.pinv(x), [(4, 3)], name="pinv"),
    OpCase(
        "linalg_svd",
        lambda m, a, b: m.linalg.lstsq(a, b).solution,
        [(5, 3), (5, 2)],
        name="lstsq",
    ),
    OpCase("linalg_eigh", _eig, [(3, 3)]),
    OpCase("linalg_eigh", _eig, [(2, 3, 3)], name="batch"),
    OpCase("linalg_eigh", lambda m, x: m.linalg.eigvalsh(_sym(x)), [(4, 4)], name="eigvalsh"),
    OpCase("linalg_qr", lambda m, x: m.linalg.qr(x), [(4, 3)]),
    OpCase("linalg_qr", lambda m, x: m.linalg.qr(x, "complete"), [(3, 3)], name="square"),
    OpCase("linalg_qr", lambda m, x: m.linalg.qr(x), [(2, 3, 3)], name="batch"),
    OpCase("linalg_qr", lambda m, x: m.linalg.qr(x), [(3, 5)], name="wide"),
    OpCase("linalg_qr", lambda m, x: m.linalg.qr(x, "complete"), [(2, 2, 4)], name="wide-complete"),
]
