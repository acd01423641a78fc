"""MaxPool1d, AvgPool1d and the adaptive pools against torch."""

import numpy as np
import pytest

import tapegrad as tg

from ._compare import compare_module

rng = np.random.default_rng(0)

CASES = [
    ("MaxPool1d", (2,), {}, (2, 3, 8)),
    ("MaxPool1d", (3, 2, 1), {"dilation": 2, "ceil_mode": True}, (3, 11)),
    ("AvgPool1d", (2,), {}, (2, 3, 8)),
    ("AvgPool1d", (3, 2, 1), {"count_include_pad": False, "ceil_mode": True}, (2, 3, 10)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveAvgPool2d", ((1, 1),), {}, (2, 3, 5, 4)),
    ("AdaptiveAvgPool2d", (3,), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", ((2, None),), {}, (3, 7, 5)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", (1,), {}, (3, 4, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_pool_matches_torch(case, torch_mod):
    name, args, kwargs, shape = case
    ours = getattr(tg.nn, name)(*args, **kwargs)
    theirs = getattr(torch_mod.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    compare_module(ours, theirs, torch_mod, rng.standard_normal(shape))


@pytest.mark.parametrize(
    "fn, args",
    [("max_pool1d", (3, 2, 1)), ("adaptive_max_pool1d", (3,)), ("adaptive_max_pool2d", ((3, 2),))],
)
def test_pool_indices_match_torch(fn, args, torch_mod):
    x = rng.standard_normal((2, 3, 7, 5) if fn.endswith("2d") else (2, 3, 9))
    a = getattr(tg.nn.functional, fn)(tg.tensor(x), *args, return_indices=True)
    b = getattr(torch_mod.nn.functional, fn)(torch_mod.tensor(x), *args, return_indices=True)
    np.testing.assert_allclose(a[0].numpy(), b[0].numpy())
    np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())
    assert a[1].dtype == tg.int64


def test_adaptive_avg_pool_gradgradcheck():
    x = tg.randn(1, 2, 5, 4, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda x: tg.nn.functional.adaptive_avg_pool2d(x, 3), [x])
