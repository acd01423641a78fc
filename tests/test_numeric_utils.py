"""Issue 10 part M's numeric utilities against torch: edge cases the op table does not reach
(empty inputs, 0-d, integer dtypes, dtype promotion, error types)."""

import numpy as np
import pytest

import tapegrad as tg


def _to_tg(torch, v):
    if isinstance(v, torch.Tensor):
        return tg.tensor(v.numpy())
    if isinstance(v, (list, tuple)):
        return type(v)(_to_tg(torch, x) for x in v)
    if isinstance(v, dict):
        return {k: _to_tg(torch, x) for k, x in v.items()}
    return v


def _same(torch, ours, ref):
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _same(torch, o, r)
        return
    assert isinstance(ours, tg.Tensor)
    want = ref.numpy()
    assert ours.shape == want.shape
    assert ours.numpy().dtype == want.dtype, (ours.numpy().dtype, want.dtype)
    np.testing.assert_allclose(ours.numpy(), want, rtol=1e-6, atol=1e-8, equal_nan=True)


def _compare(torch, name, *args, **kwargs):
    ref = getattr(torch, name)(*args, **kwargs)
    ours = getattr(tg, name)(*_to_tg(torch, args), **_to_tg(torch, kwargs))
    _same(torch, ours, ref)


CASES = [
    ("diff", lambda t: (t.tensor([1, 4, 9, 16], dtype=t.int32),), {}),
    ("diff", lambda t: (t.tensor([True, False, False, True]),), {"n": 2}),
    ("diff", lambda t: (t.arange(6.0).reshape(2, 3),), {"n": 5}),
    ("diff", lambda t: (t.arange(6.0).reshape(2, 3),), {"n": 0}),
    ("diff", lambda t: (t.ones(2, 0),), {"dim": 0}),
    ("gradient", lambda t: (t.tensor([1, 4, 9, 16]),), {}),
    ("gradient", lambda t: (t.arange(12.0).reshape(3, 4) ** 2,), {"dim": [1, 0], "spacing": 3}),
    ("gradient", lambda t: (t.arange(12.0).reshape(3, 4) ** 2,), {"dim": -1, "edge_order": 2}),
    ("trapezoid", lambda t: (t.tensor([1, 2, 3]),), {}),
    ("trapezoid", lambda t: (t.tensor([1, 2, 3]),), {"dx": 2}),
    ("trapezoid", lambda t: (t.ones(3, 0),), {}),
    ("trapezoid", lambda t: (t.arange(6.0).reshape(2, 3), t.tensor([0.0, 1.0, 3.0])), {}),
    ("trapz", lambda t: (t.arange(6.0).reshape(2, 3),), {"dim": 0}),
    ("cumulative_trapezoid", lambda t: (t.tensor([1, 2, 3]),), {}),
    ("cumulative_trapezoid", lambda t: (t.ones(3, 0),), {}),
    ("cumulative_trapezoid", lambda t: (t.ones(3, 1),), {}),
    ("cov", lambda t: (t.tensor([1, 2, 4]),), {}),
    ("cov", lambda t: (t.tensor([[1.0, 2.0], [3.0, 5.0]]),), {"correction": 0}),
    ("cov", lambda t: (t.tensor(3.0),), {"correction": 0}),
    ("corrcoef", lambda t: (t.tensor([[1, 2, 4], [1, 0, 1]]),), {}),
    ("corrcoef", lambda t: (t.tensor([1.0, 2.0, 4.0]),), {}),
    ("logdet", lambda t: (t.tensor([[0.0, 1.0], [1.0, 0.0]]),), {}),  # det < 0: NaN
    ("logdet", lambda t: (t.zeros(2, 2),), {}),  # singular: -inf
    ("logdet", lambda t: (t.zeros(3, 0, 0),), {}),
    ("dist", lambda t: (t.ones(3), t.zeros(2, 3)), {"p": 0}),
    ("dist", lambda t: (t.ones(3), t.zeros(2, 3)), {"p": float("inf")}),
    ("renorm", lambda t: (t.arange(12.0).reshape(3, 4),), {"p": 1, "dim": 1, "maxnorm": 5}),
    ("histogram", lambda t: (t.tensor([1.0, 2.0, 1.0, 7.0]),), {"bins": 4}),
    ("histogram", lambda t: (t.tensor([]),), {"bins": 3}),
    ("histogram", lambda t: (t.tensor([2.0, 2.0]),), {"bins": 3}),
    (
        "histogram",
        lambda t: (t.tensor([1.0, 2.0, 3.0, 4.0]),),
        {"bins": 3, "range": (0.0, 2.0), "density": True},
    ),
    (
        "histogram",
        lambda t: (t.tensor([[1.0, 2.0], [5.0, 0.5]]),),
        lambda t: {"bins": t.tensor([0.0, 1.5, 6.0]), "weight": t.tensor([[1.0, 2.0], [3.0, 4.0]])},
    ),
    (
        "histogram",
        lambda t: (t.rand(200, generator=t.Generator().manual_seed(0), dtype=t.float32),),
        {"bins": 7},
    ),
    (
        "histogramdd",
        lambda t: (t.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]),),
        lambda t: {"bins": [3, 2], "weight": t.tensor([1.0, 2.0, 4.0, 8.0]), "density": True},
    ),
    (
        "histogramdd",
        lambda t: (t.tensor([[0.0, 1.0], [1.0, 0.0]]),),
        {"bins": 2, "range": [0.0, 1.0, 0.0, 1.0]},
    ),
    ("isin", lambda t: (t.tensor([1, 2, 3]), 2), {}),
    ("isin", lambda t: (2, t.tensor([1, 2, 3])), {"invert": True}),
    ("isin", lambda t: (t.tensor([1.0, float("nan")]), t.tensor([float("nan"), 1.0])), {}),
    ("isin", lambda t: (t.tensor([[1, 5], [2, 2]]), t.tensor([2, 5])), {"assume_unique": True}),
    ("nonzero_static", lambda t: (t.tensor([0, 1, 0, 2]),), {"size": 3}),
    ("nonzero_static", lambda t: (t.tensor([[0, 1], [1, 1]]),), {"size": 1, "fill_value": 7}),
    ("nonzero_static", lambda t: (t.tensor(1.0),), {"size": 3}),
    ("hash_tensor", lambda t: (t.tensor([[1.0, 2.0], [3.0, 4.0]]),), {}),
    ("hash_tensor", lambda t: (t.tensor([[1.0, 2.0], [3.0, 4.0]]), (0,)), {"keepdim": True}),
    ("hash_tensor", lambda t: (t.tensor([True, False]),), {}),
    ("hash_tensor", lambda t: (t.tensor([-1, 7], dtype=t.int8),), {}),
    ("hash_tensor", lambda t: (t.tensor([1.5, -0.0], dtype=t.float32),), {}),
    ("combinations", lambda t: (t.tensor([1.0, 2.0, 3.0]),), {"r": 0}),
    ("combinations", lambda t: (t.tensor([1.0, 2.0, 3.0]),), {"r": 4}),
    ("combinations", lambda t: (t.tensor([1, 2, 3]),), {"r": 4, "with_replacement": True}),
    ("combinations", lambda t: (t.tensor([]),), {}),
    ("fill", lambda t: (t.ones(2, dtype=t.int32), t.tensor(2.5)), {}),
    ("fill", lambda t: (t.ones(2), t.tensor(2)), {}),
    ("fill", lambda t: (t.ones(2, 0), 1.5), {}),
    ("broadcast_tensors", lambda t: (t.ones(3), t.zeros(2, 1), t.tensor(5.0)), {}),
]


@pytest.mark.parametrize(
    "name,make,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_matches_torch(torch_mod, name, make, kwargs):
    kwargs = kwargs(torch_mod) if callable(kwargs) else kwargs
    _compare(torch_mod, name, *make(torch_mod), **kwargs)


def test_histogram_bins_tensor_kwarg(torch_mod):
    t = torch_mod
    x = t.tensor([[1.0, 2.0], [5.0, 0.5]])
    ref = t.histogram(x, bins=t.tensor([0.0, 1.5, 6.0]), weight=t.tensor([[1.0, 2.0], [3.0, 4.0]]))
    ours = tg.histogram(
        tg.tensor(x.numpy()),
        bins=tg.tensor([0.0, 1.5, 6.0], dtype=tg.float32),
        weight=tg.tensor([[1.0, 2.0], [3.0, 4.0]]),
    )
    _same(t, ours, ref)
    assert type(ours).__name__ == "histogram" and ours.hist is ours[0]


def test_gradient_returns_a_tuple_and_coordinates():
    x = tg.tensor([1.0, 4.0, 9.0, 16.0])
    (g,) = tg.gradient(x, spacing=(tg.tensor([0.0, 1.0, 1.5, 3.0]),))
    assert isinstance(tg.gradient(x), tuple)
    assert g.shape == (4,)


def test_sum_to_size_and_H(torch_mod):
    x = np.arange(6.0).reshape(2, 3)
    assert tg.tensor(x).sum_to_size(1, 3).tolist() == [[3.0, 5.0, 7.0]]
    assert tg.tensor(x).sum_to_size((3,)).tolist() == [3.0, 5.0, 7.0]
    assert tg.tensor(x).H.tolist() == torch_mod.tensor(x).H.tolist()
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert tg.tensor(2.0).H.item() == 2.0


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tg.diff(tg.tensor(1.0)), RuntimeError, "at least one-dimensional"),
        (lambda: tg.diff(tg.ones(3), n=-1), RuntimeError, "non-negative"),
        (lambda: tg.diff(tg.ones(3), prepend=tg.ones(1, 1)), RuntimeError, "same dimension"),
        (lambda: tg.gradient(tg.ones(2), edge_order=2), RuntimeError, "at least edge_order"),
        (lambda: tg.gradient(tg.ones(4), edge_order=3), RuntimeError, "edge_order=1"),
        (lambda: tg.gradient(tg.ones(3, 3), spacing=[1.0]), RuntimeError, "same length"),
        (lambda: tg.trapezoid(tg.ones(3), tg.ones(2)), RuntimeError, "one `x` value"),
        (lambda: tg.cov(tg.ones(2, 2, 2)), RuntimeError, "two or fewer"),
        (lambda: tg.cov(tg.ones(3), fweights=tg.ones(3)), RuntimeError, "integral dtype"),
        (lambda: tg.cov(tg.ones(3), aweights=-tg.ones(3)), RuntimeError, "cannot be negative"),
        (lambda: tg.renorm(tg.ones(3), 2, 0, 1.0), RuntimeError, "at least 2 dimensions"),
        (lambda: tg.histogram(tg.tensor([1, 2]), 3), NotImplementedError, "histogram"),
        (lambda: tg.histogram(tg.tensor([1.0, np.nan]), 3), RuntimeError, "not finite"),
        (
            lambda: tg.histogram(tg.tensor([1.0, 2.0]), 3, range=(2.0, 1.0)),
            RuntimeError,
            "min should not exceed max",
        ),
        (lambda: tg.combinations(tg.ones(2, 2)), RuntimeError, "Expect a 1D vector"),
        (lambda: tg.fill(tg.ones(3), tg.ones(2)), RuntimeError, "0-dimension value"),
        (lambda: tg.broadcast_tensors(tg.ones(3), tg.ones(4)), RuntimeError, "must match"),
        (lambda: tg.ones(3).sum_to_size(2), RuntimeError, "not expandable"),
        (lambda: tg.ones(3).H, RuntimeError, "only supported on matrices"),
        (lambda: tg.hash_tensor(tg.ones(0)), RuntimeError, "reduction dim"),
        (lambda: tg.hash_tensor(tg.ones(2, 0), 1), IndexError, "non-zero size"),
    ],
)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_fill_gradients():
    x = tg.ones(3, requires_grad=True)
    v = tg.tensor(2.0, requires_grad=True)
    gx, gv = tg.autograd.grad(tg.fill(x, v).sum(), [x, v])
    assert gx.tolist() == [0.0, 0.0, 0.0] and gv.item() == 3.0
