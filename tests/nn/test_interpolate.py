"""F.interpolate and Upsample against torch: every mode, align_corners, sizes and scales."""

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)

CASES = [
    # (input shape, kwargs)
    ((2, 3, 5), {"size": 8, "mode": "nearest"}),
    ((2, 3, 5), {"scale_factor": 2.5, "mode": "nearest"}),
    ((2, 3, 7), {"size": 3, "mode": "nearest"}),
    ((2, 3, 5), {"size": 8, "mode": "nearest-exact"}),
    ((2, 3, 5), {"size": 9, "mode": "linear"}),
    ((2, 3, 5), {"size": 9, "mode": "linear", "align_corners": True}),
    ((2, 3, 9), {"size": 4, "mode": "linear"}),
    ((1, 2, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 5), {"scale_factor": (1.5, 0.7), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"size": (7, 9), "mode": "bicubic"}),
    ((1, 2, 6, 5), {"size": (3, 8), "mode": "bicubic", "align_corners": True}),
    ((1, 2, 3, 4, 5), {"size": (5, 6, 4), "mode": "trilinear"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 2, "mode": "nearest"}),
    ((1, 2, 7, 6), {"size": (3, 4), "mode": "area"}),
    ((1, 2, 4, 4), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_interpolate_matches_torch(case, torch_mod):
    shape, kw = case
    x = rng.standard_normal(shape)
    res = []
    for m, fn in ((tg, tg.nn.functional), (torch_mod, torch_mod.nn.functional)):
        xt = m.tensor(x, requires_grad=True)
        out = fn.interpolate(xt, **kw)
        w = np.cos(np.arange(int(np.prod(tuple(out.shape))))).reshape(tuple(out.shape))
        (out * m.tensor(w)).sum().backward()
        res.append((out.detach().numpy(), xt.grad.numpy()))
    assert res[0][0].shape == res[1][0].shape
    np.testing.assert_allclose(res[0][0], res[1][0], atol=1e-10, err_msg="output")
    np.testing.assert_allclose(res[0][1], res[1][1], atol=1e-10, err_msg="input grad")


def test_upsample_modules(torch_mod):
    for args, kw in [((), {"scale_factor": 2}), ((), {"size": (3, 4), "mode": "bilinear",
                     "align_corners": True})]:  # fmt: skip
        assert repr(tg.nn.Upsample(*args, **kw)) == repr(torch_mod.nn.Upsample(*args, **kw))
    x = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        a = getattr(tg.nn, name)(scale_factor=2)(tg.tensor(x))
        b = getattr(torch_mod.nn, name)(scale_factor=2)(torch_mod.tensor(x))
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
        assert a.dtype == tg.float32


def test_interpolate_errors():
    x = tg.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="align_corners"):
        tg.nn.functional.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        tg.nn.functional.interpolate(x)
    with pytest.raises(NotImplementedError, match="bilinear"):
        tg.nn.functional.interpolate(tg.randn(1, 2, 4), size=3, mode="bilinear")
