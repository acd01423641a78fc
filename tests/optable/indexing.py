"""Table rows: indexing, gather/scatter, masked_fill, and in-place ops on non-leaf tensors.

In-place rows run on ``x * 1.0`` (a non-leaf), so the op is recorded and its gradient,
second derivative and PyTorch values are checked like any other op.
"""

from . import OpCase


def _ix(m, *values):
    return m.tensor(list(values))


def _setitem(key_fn):
    def fn(m, x, v):
        y = x * 1.0
        y[key_fn(m)] = v
        return y

    return fn


def _setitem_scalar(m, x):
    y = x * 1.0
    y[:, 1] = 0.5
    return y


def _iadd(m, x, y):
    z = x * 1.0
    z += y
    z *= y
    z -= x
    z /= 2.0
    return z


def _clamp_(m, x):
    return (x * 1.0).clamp_(-0.5, 0.7)


def _bool_mask(m):
    return m.tensor([[True, False, True], [False, False, True]])


CASES = [
    # x[key]: basic
    OpCase("getitem", lambda m, x: x[1], [(3, 2)], name="int"),
    OpCase("getitem", lambda m, x: x[1, 0], [(3, 2)], name="int-0d"),
    OpCase("getitem", lambda m, x: x[:, 1:3], [(2, 4)], name="slice"),
    OpCase("getitem", lambda m, x: x[::2, None, ..., -1], [(5, 2, 3)], name="step-none-ellipsis"),
    OpCase("getitem", lambda m, x: x[...] * 2.0, [()], name="0d"),
    OpCase("getitem", lambda m, x: x[2:2], [(3, 2)], name="empty"),
    # x[key]: advanced
    OpCase("getitem", lambda m, x: x[_ix(m, 0, 2, 0, 0)], [(3, 2)], name="repeated"),
    OpCase("getitem", lambda m, x: x[[1, -1]], [(3, 2)], name="list"),
    OpCase(
        "getitem", lambda m, x: x[_ix(m, 0, 1, 1), _ix(m, 2, 2, 0)], [(2, 3)], name="two-arrays"
    ),
    OpCase("getitem", lambda m, x: x[:, _ix(m, 1, 1)], [(2, 3, 2)], name="slice-array"),
    OpCase("getitem", lambda m, x: x[_ix(m, [0, 1], [1, 1])], [(3, 2)], name="2d-index"),
    OpCase("getitem", lambda m, x: x[_bool_mask(m)], [(2, 3)], name="mask"),
    OpCase("getitem", lambda m, x: x[m.tensor([True, False, True])], [(3, 2)], name="row-mask"),
    OpCase("getitem", lambda m, x: x[x > 0], [(2, 3)], name="mask-from-x"),
    OpCase("getitem", lambda m, x: x[1:, _ix(m, 0, 0)], [(3, 2)], name="mixed"),
    OpCase("getitem", lambda m, x: x[_ix(m, 0, 1)[:0]], [(3, 2)], name="empty-index"),
    # named gather/scatter ops
    OpCase("index_select", lambda m, x: x.index_select(1, _ix(m, 2, 0, 2)), [(2, 3)]),
    OpCase("index_select", lambda m, x: m.index_select(x, 0, _ix(m, 1)), [(2, 3)], name="one"),
    OpCase("gather", lambda m, x: x.gather(1, _ix(m, [0, 0], [2, 1])), [(2, 3)]),
    OpCase("gather", lambda m, x: m.gather(x, 0, _ix(m, [1, 0, 1])), [(2, 4)], name="dim0"),
    OpCase("take_along_dim", lambda m, x: m.take_along_dim(x, _ix(m, [0, 2], [1, 1]), 1), [(2, 3)]),
    OpCase(
        "take_along_dim",
        lambda m, x: x.take_along_dim(_ix(m, [0], [2]), 1),
        [(1, 3)],
        name="broadcast",
    ),
    OpCase(
        "take_along_dim", lambda m, x: m.take_along_dim(x, _ix(m, 5, 0, 5)), [(2, 3)], name="flat"
    ),
    OpCase("scatter", lambda m, x, s: x.scatter(1, _ix(m, [0, 2], [1, 0]), s), [(2, 3), (2, 2)]),
    OpCase(
        "scatter", lambda m, x: m.scatter(x, 0, _ix(m, [1, 0]), value=2.0), [(2, 2)], name="value"
    ),
    OpCase(
        "scatter_add",
        lambda m, x, s: x.scatter_add(1, _ix(m, [0, 0, 2], [1, 1, 1]), s),
        [(2, 3), (2, 3)],
    ),
    OpCase("masked_fill", lambda m, x: x.masked_fill(_bool_mask(m), -1.0), [(2, 3)]),
    OpCase(
        "masked_fill",
        lambda m, x, v: m.masked_fill(x, m.tensor([True, False, True]), v),
        [(2, 3), ()],
        name="tensor-value",
    ),
    # in-place ops on non-leaves
    OpCase("add_", lambda m, x, y: (x * 1.0).add_(y, alpha=2.0), [(2, 3), (3,)]),
    OpCase("sub_", lambda m, x, y: (x * 1.0).sub_(y), [(2, 3), (2, 3)]),
    OpCase("mul_", lambda m, x, y: (x * 1.0).mul_(y), [(2, 3), (1, 3)]),
    OpCase("mul_", lambda m, x: (x * 1.0).mul_(3.0), [(4,)], name="scalar"),
    OpCase("div_", lambda m, x, y: (x * 1.0).div_(y), [(2, 3), (3,)], domain=[(-2, 2), (0.5, 2)]),
    OpCase("fill_", lambda m, x, v: (x * 1.0).fill_(v) * x, [(2, 3), ()]),
    OpCase("copy_", lambda m, x, y: (x * 1.0).copy_(y) * x, [(2, 3), (3,)]),
    OpCase("clamp_", _clamp_, [(2, 3)], domain=(-1, 1)),
    OpCase("setitem", _setitem(lambda m: (0, slice(1, None))), [(2, 3), (2,)]),
    OpCase("setitem", _setitem(lambda m: _ix(m, 2, 0)), [(3, 2), (2,)], name="advanced"),
    OpCase("setitem", _setitem(lambda m: _bool_mask(m)), [(2, 3), ()], name="mask"),
    OpCase("setitem", _setitem_scalar, [(2, 3)], name="scalar"),
    OpCase("add_", _iadd, [(2, 3), (3,)], domain=[(-2, 2), (0.5, 2)], name="operators"),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("getitem", lambda m, x: x[None] * 2.0, [()], name="0d-none"),
    OpCase("getitem", lambda m, x: x[()] * 2.0, [()], name="0d-tuple"),
    OpCase(
        "index_select",
        lambda m, x: x.index_select(0, _ix(m, 0, 1)[:0]),
        [(3, 2)],
        name="empty-index",
    ),
    OpCase("gather", lambda m, x: x.gather(0, _ix(m, 0)[0]), [()], name="0d"),
    OpCase("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.5), [()], name="0d"),
    OpCase(
        "scatter_add",
        lambda m, x, s: x.scatter_add(1, _ix(m, [0], [1])[:, :0], s),
        [(2, 3), (2, 0)],
        name="empty-index",
    ),
    OpCase("add_", lambda m, x, y: (x * 1.0).add_(y), [(), ()], name="0d"),
    OpCase("fill_", lambda m, x, v: (x * 1.0).fill_(v) * x, [(0, 3), ()], name="empty"),
    OpCase("setitem", lambda m, x, v: _setitem(lambda m: ...)(m, x, v) * x, [(), ()], name="0d"),
]
