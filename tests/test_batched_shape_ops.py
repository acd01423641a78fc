"""Batched backward (Note [Batched gradients]) through joining, shape and indexing ops.

Each case computes ``jacobian(f, x, vectorize=True)`` with the per-row fallback
disabled (``batched._row_loop`` raises), so the test fails both when a backward rule
cannot run batched and when its batched result disagrees with the probe; the
Jacobian must equal the one computed row by row.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched
from tapegrad.autograd.functional import hessian, jacobian
from tapegrad.ops.joining import pad


def _x(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tg.tensor(data, dtype=tg.float64, requires_grad=True)


def _flat(res):
    if isinstance(res, tuple):
        return [a for r in res for a in _flat(r)]
    return [res.detach().numpy()]


def _no_fallback(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the batched backward fell back to one backward per row")

    monkeypatch.setattr(batched, "_row_loop", refuse)


def _check(monkeypatch, f, *inputs):
    inputs = inputs if len(inputs) > 1 else inputs[0]
    ref = jacobian(f, inputs)
    _no_fallback(monkeypatch)
    got = jacobian(f, inputs, vectorize=True)
    ref, got = _flat(ref), _flat(got)
    assert len(ref) == len(got)
    assert any(np.abs(r).sum() > 0 for r in ref)  # a Jacobian of zeros would prove nothing
    for r, g in zip(ref, got, strict=True):
        assert r.shape == g.shape
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


# -- joining -------------------------------------------------------------------------------

JOINING = {
    "cat": lambda x: tg.cat([x, x * x], 1),
    "cat-neg-dim": lambda x: tg.cat([x * 2.0, x], -2),
    "stack": lambda x: tg.stack([x, x * x], 1),
    "stack-last": lambda x: tg.stack([x, x * 3.0], -1),
    "split": lambda x: x.split([1, 2], 1)[1] * 2.0,
    "split-both": lambda x: tg.cat(x.split(1, 0)[::-1], 1),
    "chunk": lambda x: x.chunk(2, 1)[0] * x.chunk(2, 1)[1][:, :1],
    "narrow": lambda x: x.narrow(1, 1, 2),
    "narrow-neg": lambda x: x.narrow(0, -1, 1),
    "pad-constant": lambda x: pad(x, (1, 2, 0, 1), value=0.5),
    "pad-crop": lambda x: pad(x, (-1, 1)),
    "pad-reflect": lambda x: pad(x, (2, 1), mode="reflect"),
    "pad-replicate": lambda x: pad(x, (1, 2, 1, 0), mode="replicate"),
    "pad-circular": lambda x: pad(x, (2, 1), mode="circular"),
}


@pytest.mark.parametrize("name", list(JOINING))
def test_joining(monkeypatch, name):
    _check(monkeypatch, JOINING[name], _x(2, 3))


def test_cat_skips_empty_vector(monkeypatch):
    _check(monkeypatch, lambda a, e: tg.cat([a, e, a * 2.0]), _x(3), _x(0))


# -- flip, repeat, roll, tile --------------------------------------------------------------

SHAPE = {
    "flip": (lambda x: x.flip((0, 1)), (2, 3, 2)),
    "flip-neg": (lambda x: x.flip(-1), (2, 3)),
    "flip-0d": (lambda x: x.flip(0) * tg.tensor([1.0, 2.0], dtype=tg.float64), ()),
    "repeat": (lambda x: x.repeat(2, 1, 3), (2, 3)),
    "repeat-0d": (lambda x: x.repeat(3), ()),
    "roll": (lambda x: x.roll(1, 1), (2, 3)),
    "roll-multi": (lambda x: x.roll((2, -1), (0, -1)), (3, 4)),
    "roll-flat": (lambda x: x.roll(4), (2, 3)),
    "tile": (lambda x: x.tile((2,)), (2, 3)),
    "tile-more": (lambda x: x.tile((2, 1, 2)), (2, 3)),
}


@pytest.mark.parametrize("name", list(SHAPE))
def test_shape(monkeypatch, name):
    fn, shape = SHAPE[name]
    _check(monkeypatch, fn, _x(*shape))


# -- getitem -------------------------------------------------------------------------------

_MASK = np.array(
    [[True, False, True, True], [False, False, True, False], [True, True, False, True]]
)

KEYS = {
    "int": 1,
    "neg-int": -1,
    "slice": (slice(None), slice(1, None, 2)),
    "ellipsis": (Ellipsis, 1),
    "none": (None, 0, Ellipsis, None),
    "list": [0, 2, 0],
    "array-2d": np.array([[0, 1], [2, 2]]),
    "two-arrays": ([0, 2, 1], [3, 0, 3]),
    "slice-array": (slice(None), [1, 3, 1]),
    "int-then-array": (1, [0, 0, 3]),
    "mask": _MASK,
    "row-mask": np.array([True, False, True]),
    "mask-then-slice": (np.array([False, True, True]), slice(1, 3)),
}


@pytest.mark.parametrize("name", list(KEYS))
def test_getitem(monkeypatch, name):
    key = KEYS[name]
    _check(monkeypatch, lambda x: x[key] * 2.0, _x(3, 4))


KEYS_3D = {
    "separated-arrays": ([0, 1, 1], slice(None), [2, 0, 1]),  # result dims go first
    "int-slice-array": (0, slice(None), [1, 2]),  # the int counts as an array: separated too
    "ellipsis-array": (Ellipsis, [2, 0]),
    "none-arrays": (None, [1, 0], [0, 2]),
    "mask-2d-first": (np.array([[True, False, True], [False, True, True]]), slice(0, 2)),
    "broadcast-arrays": (np.array([[0], [1]]), slice(None), np.array([0, 2, 1])),
}


@pytest.mark.parametrize("name", list(KEYS_3D))
def test_getitem_3d(monkeypatch, name):
    key = KEYS_3D[name]
    _check(monkeypatch, lambda x: x[key], _x(2, 3, 3))


def test_getitem_0d(monkeypatch):
    _check(monkeypatch, lambda x: x[None].expand(3) * tg.arange(3, dtype=tg.float64), _x())


# -- gather / scatter family ---------------------------------------------------------------

IX = tg.tensor([[0, 2, 1], [1, 1, 0]])

GATHER = {
    "gather": (lambda x: x.gather(1, IX), [(2, 3)]),
    "gather-dim0": (lambda x: x.gather(0, tg.tensor([[1, 0, 1]])), [(2, 3)]),
    "index_select": (lambda x: x.index_select(1, tg.tensor([2, 0, 2])), [(2, 3)]),
    "take_along_dim": (lambda x: x.take_along_dim(IX, 1), [(2, 3)]),
    "take_along_dim-broadcast": (lambda x: x.take_along_dim(tg.tensor([[1], [0]]), 0), [(2, 3)]),
    "take_along_dim-flat": (lambda x: x.take_along_dim(tg.tensor([5, 0, 5])), [(2, 3)]),
    "scatter": (lambda x, s: x.scatter(1, tg.tensor([[0, 2], [1, 0]]), s), [(2, 3), (2, 2)]),
    "scatter-big-src": (lambda x, s: x.scatter(1, tg.tensor([[0], [2]]), s), [(2, 3), (2, 3)]),
    "scatter-value": (lambda x: x.scatter(0, tg.tensor([[1, 0]]), value=2.0), [(2, 2)]),
    "scatter_add": (lambda x, s: x.scatter_add(1, IX, s), [(2, 3), (2, 3)]),
    "masked_fill": (lambda x: x.masked_fill(tg.tensor(_MASK[:2, :3]), -1.0), [(2, 3)]),
    "masked_fill-tensor": (
        lambda x, v: x.masked_fill(tg.tensor(_MASK[:2, :3]), v),
        [(2, 3), ()],
    ),
}


@pytest.mark.parametrize("name", list(GATHER))
def test_gather_family(monkeypatch, name):
    fn, shapes = GATHER[name]
    _check(monkeypatch, fn, *[_x(*s, seed=i) for i, s in enumerate(shapes)])


# -- x[key] = v ----------------------------------------------------------------------------


def _setitem(key):
    def fn(x, v):
        y = x * 1.0
        y[key] = v
        return y * x

    return fn


SETITEM = {
    "basic": ((1, slice(None)), (2,)),
    "advanced": (([2, 0],), (2,)),
    "separated": (([1, 0], slice(None), [0, 1]), (2, 2)),
    "mask": (_MASK[:3, :2], ()),
    "broadcast-value": ((slice(None), 1), (1,)),
}


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem(monkeypatch, name):
    key, vshape = SETITEM[name]
    shape = (2, 2, 2) if name == "separated" else (3, 2)
    _check(monkeypatch, _setitem(key), _x(*shape), _x(*vshape, seed=1))


def test_index_put_method(monkeypatch):
    def fn(x, v):
        y = x * 1.0
        y[tg.tensor([3, 0])] = v
        return y * x

    _check(monkeypatch, fn, _x(4), _x(2, seed=1))


# -- second order: the batched pass runs the backward of the backward ----------------------


def test_hessian_through_indexing(monkeypatch):
    def f(x):
        y = tg.cat([x[[0, 2, 2]], x.flip(0).roll(1)[1:]]) * x.repeat(2)[1:6]
        return (y * y.gather(0, tg.tensor([4, 0, 1, 1, 3]))).sum()

    x = _x(3)
    ref = hessian(f, x).numpy()
    _no_fallback(monkeypatch)
    got = hessian(f, x, vectorize=True).numpy()
    assert np.abs(ref).sum() > 0
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
